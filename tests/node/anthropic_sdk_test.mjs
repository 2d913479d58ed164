// The Anthropic Messages front door (frontends/anthropic/anthropic_front.h) through the
// official `@anthropic-ai/sdk` npm SDK, against a live `switchyard serve` this test starts
// (serve_fixture.mjs: the CPU engine, the tiny random-weights model).
//
//   SWITCHYARD_BIN=build/bin/switchyard node --test tests/node/anthropic_sdk_test.mjs
//
// ctest runs it as node_anthropic_sdk (tests/CMakeLists.txt).
import { after, before, describe } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { check, getWorkflow, startServer, stopServer } from './serve_fixture.mjs';

const MODEL = 'tiny-llama-4l';
const BASH = {
  name: 'Bash',
  description: 'Run a shell command',
  input_schema: {
    type: 'object',
    properties: { command: { type: 'string' } },
    required: ['command'],
  },
};

let server;

function client(extra = {}) {
  return new Anthropic({
    baseURL: server.base,
    apiKey: server.token,
    maxRetries: 0,
    timeout: 120_000,
    ...extra,
  });
}

describe('@anthropic-ai/sdk against switchyard serve', () => {
  before(async () => { server = await startServer(); });
  after(async () => { await stopServer(server); });

  check('messages.create, then the same request streamed with the SDK accumulator', async () => {
    const req = {
      model: MODEL,
      max_tokens: 16,
      temperature: 0,
      system: [{ type: 'text', text: 'You are terse.', cache_control: { type: 'ephemeral' } }],
      messages: [{ role: 'user', content: 'Say something.' }],
    };
    const m = await client().messages.create(req);
    assert.equal(m.type, 'message');
    assert.equal(m.role, 'assistant');
    assert.equal(m.model, MODEL);
    assert.ok(['end_turn', 'max_tokens'].includes(m.stop_reason), m.stop_reason);
    assert.ok(m.usage.input_tokens > 0, JSON.stringify(m.usage));
    const text = m.content.filter((b) => b.type === 'text').map((b) => b.text).join('');

    const stream = client().messages.stream(req);
    let deltas = '';
    stream.on('text', (t) => { deltas += t; });
    const final = await stream.finalMessage();
    assert.equal(deltas, text, 'temperature 0: the stream has the same text');
    assert.equal(final.stop_reason, m.stop_reason);
    assert.equal(final.usage.output_tokens, m.usage.output_tokens);
    assert.deepEqual(final.content.filter((b) => b.type === 'text').map((b) => b.text).join(''), text);
  });

  check('countTokens counts what create is charged', async () => {
    const messages = [{ role: 'user', content: 'How many tokens is this?' }];
    const n = await client().messages.countTokens({ model: MODEL, messages });
    const m = await client().messages.create({ model: MODEL, max_tokens: 2, messages });
    assert.equal(n.input_tokens, m.usage.input_tokens + m.usage.cache_read_input_tokens);
  });

  check('a forced tool_use, its tool_result turn: one workflow, the wait named Bash, cache reads', async () => {
    const headers = { 'x-claude-code-session-id': 'sdk-session-1' };
    const messages = [{ role: 'user', content: 'List the files.' }];
    let workflow = null;
    for (let turn = 0; turn < 2; turn++) {
      const { data: m, response } = await client().messages.create({
        model: MODEL, max_tokens: 8, temperature: 0, tools: [BASH],
        tool_choice: { type: 'tool', name: 'Bash' }, messages,
      }, { headers }).withResponse();
      assert.equal(m.stop_reason, 'tool_use');
      const use = m.content.find((b) => b.type === 'tool_use');
      assert.ok(use, JSON.stringify(m.content));
      assert.equal(use.name, 'Bash');
      assert.equal(typeof use.input.command, 'string');
      const wf = response.headers.get('x-switchyard-workflow-id');
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
  });

  check('errors are the SDK classes', async () => {
    await assert.rejects(
      client({ apiKey: 'wrong' }).messages.create({ model: MODEL, max_tokens: 4, messages: [{ role: 'user', content: 'x' }] }),
      Anthropic.AuthenticationError);
    await assert.rejects(
      client().messages.create({ model: 'no-such-model', max_tokens: 4, messages: [{ role: 'user', content: 'x' }] }),
      Anthropic.NotFoundError);
    await assert.rejects(
      client().messages.create({ model: MODEL, max_tokens: 4, messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AA==' } }] }] }),
      (e) => e instanceof Anthropic.BadRequestError && /image/.test(e.message));
  });
});
