// Claude Code (@anthropic-ai/claude-code, its native linux binary) unmodified against a live
// `switchyard serve` over the Anthropic Messages API: `claude -p PROMPT --output-format
// json` with ANTHROPIC_BASE_URL at the server completes a turn (exit 0, the answer's text
// is the server's), then `--resume` of its session completes a second turn that reads the
// first one's context from the session's KV (usage.cache_read_input_tokens > 0).
//
// Run it inside a loopback-only network namespace (tests/agents/in_netns.sh) so the client
// reaches the server and nothing else:
//   SWITCHYARD_BIN=build/bin/switchyard tests/agents/in_netns.sh node tests/node/claude_code_test.mjs
// ctest runs it as node_claude_code. Exit 0 passed, 1 failed, 77 skipped (the package is
// not installed: agent_run.mjs).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { cappedAnswer, requireInstalled, rmTemp, runClient, skip, tails, tempDir } from './agent_run.mjs';
import { startServer, stopServer } from './serve_fixture.mjs';

// The server's engine: the CPU engine computing the demo model (random weights over Qwen3's
// vocabulary and chat template, 131,072 positions: Claude Code's ~50 KB system prompt and
// tools fit; its answers end after 16 tokens on average). {engine: 'simulated'} answers
// placeholder words instead.
const SERVER = { engine: 'cpu', model: 'demo-qwen3-random' };
// Claude Code asks for max_tokens 32000 by default; the client's own cap keeps a turn's
// budget small anyway.
const MAX_OUTPUT_TOKENS = '256';
const PROMPT = 'Say hello in one word.';
const TIMEOUT_MS = 180_000;

if (process.platform !== 'linux') skip(`the test runs the linux binary (this is ${process.platform})`);
const [claude] = requireInstalled(`node_modules/@anthropic-ai/claude-code-linux-${process.arch}/claude`);

// Claude Code's environment: the server, a throwaway home, and no traffic but the API's.
function clientEnv(server, home, model) {
  return {
    HOME: home,
    CLAUDE_CONFIG_DIR: path.join(home, '.claude'),
    ANTHROPIC_BASE_URL: server.base,
    ANTHROPIC_API_KEY: server.token,
    ANTHROPIC_MODEL: model,
    ANTHROPIC_SMALL_FAST_MODEL: model,  // background calls (titles, summaries) too
    ANTHROPIC_DEFAULT_HAIKU_MODEL: model,
    CLAUDE_CODE_MAX_OUTPUT_TOKENS: MAX_OUTPUT_TOKENS,
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    DISABLE_AUTOUPDATER: '1',
    DISABLE_TELEMETRY: '1',
    DISABLE_ERROR_REPORTING: '1',
    DISABLE_BUG_COMMAND: '1',
    CLAUDE_CODE_DISABLE_TERMINAL_TITLE: '1',
    CI: '1',
  };
}

// `claude -p` once; returns the parsed result object (the last line of stdout).
async function turn(server, home, args) {
  const model = server.models[0];
  const r = await runClient(claude, ['-p', PROMPT, '--output-format', 'json', '--model', model, ...args], {
    env: clientEnv(server, home, model), cwd: path.join(home, 'work'), timeoutMs: TIMEOUT_MS,
  });
  let out = null;
  try {
    out = JSON.parse(r.stdout.trim().split('\n').pop());
  } catch { /* checked below */ }
  console.log(`claude -p ${args.join(' ')}: exit ${r.code} in ${r.ms} ms; result: ${JSON.stringify(out?.result)?.slice(0, 200)}`);
  if (r.code !== 0 && /output token maximum/.test(out?.result ?? '')) {
    return { gap: 'an answer ended at max_tokens (stop_reason "max_tokens"), which Claude ' +
      `Code reports as an error: ${out.result}` };
  }
  assert.equal(r.code, 0, tails(r));
  assert.ok(out, `stdout is not a JSON result: ${tails(r)}`);
  assert.equal(out.type, 'result');
  assert.equal(out.subtype, 'success', JSON.stringify(out));
  assert.equal(out.is_error, false, JSON.stringify(out));
  assert.equal(typeof out.result, 'string');
  if (SERVER.engine === 'simulated') {
    assert.match(out.result, /^simulated( simulated)*$/, 'the answer is the server\'s placeholder');
  } else {
    assert.ok(out.result.length > 0, 'an answer');
  }
  return { out };
}

async function main() {
  const server = await startServer(SERVER);
  const home = tempDir('sy_claude_code_');
  fs.mkdirSync(path.join(home, 'work'));
  let ok = false;
  let gap = null;
  try {
    const first = await turn(server, home, []);
    gap = first.gap;
    if (!gap) {
      const second = await turn(server, home, ['--resume', first.out.session_id]);
      gap = second.gap;
      if (!gap) {
        const u = second.out.usage;
        assert.ok(u.cache_read_input_tokens > 0,
          `the second turn reads the first one's context: ${JSON.stringify(u)}`);
        console.log(`second turn: ${u.cache_read_input_tokens} prompt tokens read from the session, ${u.input_tokens} new`);
      }
    }
    ok = true;
  } finally {
    await stopServer(server, { showLog: !ok });
    rmTemp(home);
  }
  if (gap) cappedAnswer(gap);
  console.log('PASS: Claude Code completed its turns against switchyard serve');
}

await main();
