// The Codex CLI (@openai/codex, its linux native binary through the npm wrapper) unmodified
// against a live `switchyard serve` over the OpenAI Responses API: `codex exec --json
// PROMPT` with a custom model provider (CODEX_HOME/config.toml: base_url at the server's
// /v1, wire_api "responses", env_key naming the variable that holds the server's token)
// completes a turn (exit 0, the agent message is the server's answer), then `codex exec
// resume --last` completes a second turn of the same thread, which reads the first one's
// context from the session's KV (usage.cached_input_tokens > 0).
//
// Run it inside a loopback-only network namespace (tests/agents/in_netns.sh):
//   SWITCHYARD_BIN=build/bin/switchyard tests/agents/in_netns.sh node tests/node/codex_test.mjs
// ctest runs it as node_codex. Exit 0 passed, 1 failed, 77 skipped (the package is not
// installed, or no namespace: agent_run.mjs).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { cappedAnswer, requireInstalled, rmTemp, runClient, skip, tails, tempDir } from './agent_run.mjs';
import { startServer, stopServer } from './serve_fixture.mjs';

// The server's engine: the CPU engine computing the demo model (random weights over Qwen3's
// vocabulary and chat template, 131,072 positions: Codex's ~20 KB of instructions and tools
// fit; its answers end after 16 tokens on average). {engine: 'simulated'} answers
// placeholder words instead.
const SERVER = { engine: 'cpu', model: 'demo-qwen3-random' };
const PROMPT = 'Say hello in one word.';
const TIMEOUT_MS = 180_000;
const ARCH = { x64: 'x64', arm64: 'arm64' }[process.arch];

if (process.platform !== 'linux' || !ARCH) skip(`the test runs the linux binary (this is ${process.platform}-${process.arch})`);
const [codex] = requireInstalled('node_modules/@openai/codex/bin/codex.js', `node_modules/@openai/codex-linux-${ARCH}/package.json`);

// CODEX_HOME/config.toml: Switchyard as the model provider; no update check, no analytics.
function writeConfig(codexHome, server) {
  fs.writeFileSync(path.join(codexHome, 'config.toml'), `\
model = "${server.models[0]}"
model_provider = "switchyard"
check_for_update_on_startup = false

[analytics]
enabled = false

[model_providers.switchyard]
name = "Switchyard"
base_url = "${server.base}/v1"
wire_api = "responses"
env_key = "SWITCHYARD_TOKEN"
`);
}

// One `codex exec --json`; returns its events (JSON lines) and the turn's usage.
async function turn(server, home, args) {
  const r = await runClient(process.execPath, [codex, 'exec', ...args], {
    env: { HOME: home, CODEX_HOME: path.join(home, '.codex'), SWITCHYARD_TOKEN: server.token },
    cwd: path.join(home, 'work'),
    timeoutMs: TIMEOUT_MS,
  });
  const events = r.stdout.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
  const messages = events.filter((e) => e.type === 'item.completed' && e.item?.type === 'agent_message');
  const text = messages.map((e) => e.item.text).join('\n');
  console.log(`codex exec ${args.slice(0, -1).join(' ')}: exit ${r.code} in ${r.ms} ms; answer: ${JSON.stringify(text).slice(0, 200)}`);
  const incomplete = /Incomplete response returned, reason: max_output_tokens/.exec(r.stdout + r.stderr);
  if (r.code !== 0 && incomplete) {
    return { gap: 'an answer ended at the output cap (status "incomplete", incomplete_details ' +
      `max_output_tokens), which Codex reports as an error: ${incomplete[0]}` };
  }
  assert.equal(r.code, 0, tails(r));
  const done = events.find((e) => e.type === 'turn.completed');
  assert.ok(done, `a turn.completed event: ${tails(r)}`);
  assert.ok(messages.length > 0, `an agent message: ${tails(r)}`);
  if (SERVER.engine === 'simulated') {
    assert.match(text, /^simulated( simulated)*$/, 'the answer is the server\'s placeholder');
  }
  return { usage: done.usage };
}

async function main() {
  const server = await startServer(SERVER);
  const home = tempDir('sy_codex_');
  fs.mkdirSync(path.join(home, 'work'));
  fs.mkdirSync(path.join(home, '.codex'));
  writeConfig(path.join(home, '.codex'), server);
  let ok = false;
  let gap = null;
  try {
    const first = await turn(server, home, ['--json', '--skip-git-repo-check', PROMPT]);
    gap = first.gap;
    if (!gap) {
      const second = await turn(server, home, ['resume', '--last', '--json', '--skip-git-repo-check', PROMPT]);
      gap = second.gap;
      if (!gap) {
        assert.ok(second.usage?.cached_input_tokens > 0,
          `the second turn reads the first one's context: ${JSON.stringify(second.usage)}`);
        console.log(`second turn: ${JSON.stringify(second.usage)}`);
      }
    }
    ok = true;
  } finally {
    await stopServer(server, { showLog: !ok });
    rmTemp(home);
  }
  if (gap) cappedAnswer(gap);
  console.log('PASS: Codex completed its turns against switchyard serve');
}

await main();
