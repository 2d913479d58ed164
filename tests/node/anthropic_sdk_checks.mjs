// The checks of the Anthropic Messages front door (frontends/anthropic/anthropic_front.h)
// through the official `@anthropic-ai/sdk` npm SDK, against a started server: the CPU
// engine's (anthropic_sdk_test.mjs) or a proxy's in front of one
// (anthropic_sdk_proxy_test.mjs). Each takes the server (serve_fixture.mjs) and asserts.
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { getWorkflow } from './serve_fixture.mjs';

export { Anthropic };
export const MODEL = 'tiny-llama-4l';
export const BASH = {
  name: 'Bash',
  description: 'Run a shell command',
  input_schema: {
    type: 'object',
    properties: { command: { type: 'string' } },
    required: ['command'],
  },
};

export function client(server, extra = {}) {
  return new Anthropic({
    baseURL: server.base,
    apiKey: server.token,
    maxRetries: 0,
    timeout: 120_000,
    ...extra,
  });
}

export const textOf = (m) => m.content.filter((b) => b.type === 'text').map((b) => b.text).join('');

// A request at temperature 0 (same answer each time on the same engine).
export const SAY = {
  model: MODEL,
  max_tokens: 16,
  temperature: 0,
  system: [{ type: 'text', text: 'You are terse.', cache_control: { type: 'ephemeral' } }],
  messages: [{ role: 'user', content: 'Say something.' }],
};

// messages.create, then the same request streamed with the SDK's accumulator: the same
// answer. Returns the text and the answers' x-switchyard-workflow-id headers.
export async function createThenStream(server) {
  const { data: m, response } = await client(server).messages.create(SAY).withResponse();
  assert.equal(m.type, 'message');
  assert.equal(m.role, 'assistant');
  assert.equal(m.model, MODEL);
  assert.ok(['end_turn', 'max_tokens'].includes(m.stop_reason), m.stop_reason);
  assert.ok(m.usage.input_tokens > 0, JSON.stringify(m.usage));
  const text = textOf(m);

  const stream = client(server).messages.stream(SAY);
  let deltas = '';
  stream.on('text', (t) => { deltas += t; });
  const final = await stream.finalMessage();
  assert.equal(deltas, text, 'temperature 0: the stream has the same text');
  assert.equal(final.stop_reason, m.stop_reason);
  assert.equal(final.usage.output_tokens, m.usage.output_tokens);
  assert.equal(textOf(final), text);
  const workflows = [response, stream.response].map((r) => r.headers.get('x-switchyard-workflow-id'));
  return { text, workflows };
}

export async function countTokens(server) {
  const messages = [{ role: 'user', content: 'How many tokens is this?' }];
  const n = await client(server).messages.countTokens({ model: MODEL, messages });
  const m = await client(server).messages.create({ model: MODEL, max_tokens: 2, messages });
  assert.equal(n.input_tokens, m.usage.input_tokens + m.usage.cache_read_input_tokens);
}

// One turn with Bash forced, whole or streamed (the SDK's accumulator); its answer and the
// response's headers.
async function forcedTurn(server, messages, headers, stream) {
  const req = {
    model: MODEL, max_tokens: 8, temperature: 0, tools: [BASH],
    tool_choice: { type: 'tool', name: 'Bash' }, messages,
  };
  if (!stream) {
    const { data, response } = await client(server).messages.create(req, { headers }).withResponse();
    return { m: data, response };
  }
  const s = client(server).messages.stream(req, { headers });
  const m = await s.finalMessage();
  return { m, response: s.response };
}

// A session of two turns, each a forced tool_use of Bash answered by a tool_result, the
// second sent as soon as the first's answer ended: one workflow (the server's), whose two
// tool waits are named Bash; the second turn reads the session's cache.
export async function forcedToolSession(server, { session, stream = false }) {
  const headers = { 'x-claude-code-session-id': session };
  const messages = [{ role: 'user', content: 'List the files.' }];
  let workflow = null;
  for (let turn = 0; turn < 2; turn++) {
    const { m, response } = await forcedTurn(server, messages, headers, stream);
    assert.equal(m.stop_reason, 'tool_use');
    const use = m.content.find((b) => b.type === 'tool_use');
    assert.ok(use, JSON.stringify(m.content));
    assert.equal(use.name, 'Bash');
    assert.equal(typeof use.input.command, 'string');
    const wf = response.headers.get('x-switchyard-workflow-id');
    assert.ok(wf, 'x-switchyard-workflow-id');
    if (turn > 0) {
      assert.equal(wf, workflow, 'one workflow per session');
      assert.ok(m.usage.cache_read_input_tokens > 0, JSON.stringify(m.usage));
    }
    workflow = wf;
    messages.push({ role: 'assistant', content: m.content });
    messages.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'a.txt' }] });
  }
  const st = await getWorkflow(server, workflow);
  const waits = st.nodes.filter((n) => n.toolName === 'Bash');
  assert.equal(waits.length, 2, JSON.stringify(st.nodes));
  return workflow;
}

export const tinyRequest = (content) => ({ model: MODEL, max_tokens: 4, messages: [{ role: 'user', content }] });

export async function authenticationError(server) {
  await assert.rejects(client(server, { apiKey: 'wrong' }).messages.create(tinyRequest('x')),
    Anthropic.AuthenticationError);
}

export async function notFoundError(server) {
  await assert.rejects(client(server).messages.create({ ...tinyRequest('x'), model: 'no-such-model' }),
    Anthropic.NotFoundError);
}

export async function badRequestError(server) {
  const image = [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AA==' } }];
  await assert.rejects(client(server).messages.create(tinyRequest(image)),
    (e) => e instanceof Anthropic.BadRequestError && /image/.test(e.message));
}
