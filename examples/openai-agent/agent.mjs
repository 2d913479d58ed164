#!/usr/bin/env node
// A small tool-calling agent loop with the official `openai` SDK against Switchyard's
// OpenAI-compatible front door (frontends/openai/openai_front.h). It declares a `bash` tool, asks the
// model for a call of it every turn, runs the command, sends the output back as a
// `role: "tool"` message and asks again, for --turns turns, then asks for a final text
// answer. Every request carries the same x-session-id, so Switchyard sees one workflow: an
// LLM node per turn, extending the session's KV context, and a `bash` wait node between
// turns while this script runs the tool (the scheduler keeps, demotes or discards the KV
// during it). Each turn prints its latency and usage.prompt_tokens_details.cached_tokens.
//
//   node agent.mjs [--url http://127.0.0.1:8470/v1] [--token-file var/service/tokens/default]
//                  [--turns 3] [--session ID] [--run] [--timeout-ms 5000] [--max-tokens 32]
//
// The server's model may have RANDOM weights (scripts/run.sh serves tiny-llama-4l): it
// cannot choose to call a tool, so the call is forced with tool_choice, and its "command" is
// gibberish. So the command from the arguments is run only with --run (in a fresh temporary
// directory, under --timeout-ms); otherwise a fixed harmless command (`ls`) runs in its
// place and the script says so. With a real model behind the front, --run is the agent.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const SAFE_COMMAND = 'ls';
const MAX_TOOL_OUTPUT = 512;  // characters of a tool's output sent back (the tiny model has 4096 positions)

const { values: opt } = parseArgs({
  options: {
    url: { type: 'string', default: process.env.SWITCHYARD_URL ?? 'http://127.0.0.1:8470/v1' },
    token: { type: 'string', default: process.env.SWITCHYARD_TOKEN },
    'token-file': { type: 'string', default: path.join(ROOT, 'var/service/tokens/default') },
    model: { type: 'string' },
    turns: { type: 'string', default: '3' },
    session: { type: 'string', default: `agent-${process.pid}-${Date.now()}` },
    run: { type: 'boolean', default: false },
    'timeout-ms': { type: 'string', default: '5000' },
    'max-tokens': { type: 'string', default: '32' },
    'keep-session': { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (opt.help) {
  console.log(fs.readFileSync(fileURLToPath(import.meta.url), 'utf8').split('\n').slice(1, 19)
    .map((l) => l.replace(/^\/\/ ?/, '')).join('\n'));
  process.exit(0);
}

const token = opt.token ?? readToken(opt['token-file']);
const turns = Number(opt.turns);
const timeoutMs = Number(opt['timeout-ms']);
const maxTokens = Number(opt['max-tokens']);

function readToken(file) {
  try {
    return fs.readFileSync(file, 'utf8').trim();
  } catch (e) {
    console.error(`agent: cannot read the tenant token from ${file} (${e.code}); ` +
      'start the server with scripts/run.sh, or pass --token / --token-file');
    process.exit(2);
  }
}

const client = new OpenAI({
  baseURL: opt.url,
  apiKey: token,
  defaultHeaders: { 'x-session-id': opt.session },  // one Switchyard workflow for the loop
  maxRetries: 0,
});

const tools = [{
  type: 'function',
  function: {
    name: 'bash',
    description: 'Run a bash command line and return its output',
    parameters: {
      type: 'object',
      properties: { command: { type: 'string', description: 'the command line' } },
      required: ['command'],
    },
  },
}];

// Runs a command line with `bash -c` under the timeout; resolves with what to send back.
function runBash(cmd, cwd) {
  return new Promise((resolve) => {
    execFile('bash', ['-c', cmd], { cwd, timeout: timeoutMs, maxBuffer: 1 << 20 },
      (err, stdout, stderr) => {
        let status = 'exit 0';
        if (err) status = err.killed ? `killed after ${timeoutMs} ms` : `exit ${err.code ?? err.signal}`;
        const out = `${stdout}${stderr}`;
        resolve(`${out.length > MAX_TOOL_OUTPUT ? `${out.slice(0, MAX_TOOL_OUTPUT)}...` : out}[${status}]`);
      });
  });
}

async function main() {
  const model = opt.model ?? (await client.models.list()).data[0]?.id;
  if (!model) throw new Error('the server lists no model');
  console.log(`model ${model} at ${opt.url}, session ${opt.session}, ${turns} tool turns` +
    (opt.run ? ' (--run: the model\'s commands run for real)' :
      ` (the model's commands are NOT run: '${SAFE_COMMAND}' runs in their place; --run runs them)`));
  const sandbox = opt.run ? fs.mkdtempSync(path.join(os.tmpdir(), 'sy_agent_')) : process.cwd();
  const messages = [
    { role: 'system', content: 'You are a coding agent. Use the bash tool to inspect the repository.' },
    { role: 'user', content: 'What is in the current directory? Look, then summarise.' },
  ];
  let workflow = null;
  for (let turn = 0; turn <= turns; turn++) {
    const last = turn === turns;  // the final answer: text, no tool call
    const t0 = performance.now();
    const { data, response } = await client.chat.completions.create({
      model, messages, tools,
      tool_choice: last ? 'none' : { type: 'function', function: { name: 'bash' } },
      max_tokens: maxTokens,
      temperature: 0,
    }).withResponse();
    const latency = performance.now() - t0;
    workflow ??= response.headers.get('x-switchyard-workflow-id');
    const msg = data.choices[0].message;
    const cached = data.usage?.prompt_tokens_details?.cached_tokens ?? 0;
    console.log(`turn ${turn}: ${latency.toFixed(0)} ms, prompt ${data.usage?.prompt_tokens} tokens ` +
      `(${cached} cached), ${data.usage?.completion_tokens} generated, ` +
      `finish ${data.choices[0].finish_reason}, node ${response.headers.get('x-switchyard-node-id')}`);
    messages.push({ role: 'assistant', content: msg.content ?? null, ...(msg.tool_calls ? { tool_calls: msg.tool_calls } : {}) });
    if (last || !msg.tool_calls?.length) {
      console.log(`answer: ${JSON.stringify(msg.content)}`);
      break;
    }
    for (const call of msg.tool_calls) {
      let cmd;
      try {
        cmd = String(JSON.parse(call.function.arguments).command ?? '');
      } catch {
        cmd = '';
      }
      const run = opt.run ? cmd : SAFE_COMMAND;
      const t1 = performance.now();
      const result = await runBash(run, sandbox);
      console.log(`  ${call.function.name} ${JSON.stringify(cmd.slice(0, 60))}` +
        (opt.run ? '' : ` -> not run; ran '${SAFE_COMMAND}' instead`) +
        ` (${(performance.now() - t1).toFixed(0)} ms)`);
      messages.push({ role: 'tool', tool_call_id: call.id, content: result });
    }
  }
  console.log(`workflow ${workflow}: GET ${opt.url.replace(/\/v1\/?$/, '')}/v1/workflows/${workflow} ` +
    'shows its llm-N and bash nodes and the scheduler\'s decisions');
  if (!opt['keep-session']) {
    // Ends the session now (it would end after the front's idle timeout): closes the workflow.
    const r = await fetch(`${opt.url.replace(/\/$/, '')}/sessions/${encodeURIComponent(opt.session)}`,
      { method: 'DELETE', headers: { authorization: `Bearer ${token}` } });
    console.log(`session ${opt.session} ended: HTTP ${r.status}`);
  }
  if (opt.run) fs.rmSync(sandbox, { recursive: true, force: true });
}

main().catch((e) => {
  console.error(`agent: ${e instanceof OpenAI.APIError ? `${e.status} ${e.message}` : e.stack ?? e}`);
  process.exit(1);
});
