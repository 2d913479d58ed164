// The OpenAI Responses front door (frontends/responses/responses_front.h) through the
// official `openai` npm SDK's responses.* calls, against a live `switchyard serve` this test
// starts (serve_fixture.mjs: the CPU engine, the tiny random-weights model).
//
//   SWITCHYARD_BIN=build/bin/switchyard node --test tests/node/responses_sdk_test.mjs
//
// ctest runs it as node_responses_sdk (tests/CMakeLists.txt).
import { after, before, describe } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { check, getWorkflow, startServer, stopServer } from './serve_fixture.mjs';

const MODEL = 'tiny-llama-4l';
const SHELL = {
  type: 'function',
  name: 'shell',
  description: 'Run a shell command',
  parameters: {
    type: 'object',
    properties: { command: { type: 'string' } },
    required: ['command'],
  },
  strict: false,
};

let server;

function client() {
  return new OpenAI({ baseURL: `${server.base}/v1`, apiKey: server.token, maxRetries: 0, timeout: 120_000 });
}

const textOf = (r) => r.output.filter((i) => i.type === 'message')
  .flatMap((m) => m.content).filter((c) => c.type === 'output_text').map((c) => c.text).join('');

describe('openai SDK responses.* against switchyard serve', () => {
  before(async () => { server = await startServer(); });
  after(async () => { await stopServer(server); });

  check('responses.create, retrieve, input_items and delete; the same request streamed', async () => {
    const req = { model: MODEL, instructions: 'Be terse.', input: 'Say something.', max_output_tokens: 16, temperature: 0 };
    const r = await client().responses.create(req);
    assert.equal(r.object, 'response');
    assert.ok(['completed', 'incomplete'].includes(r.status), r.status);
    assert.equal(r.model, MODEL);
    assert.ok(r.usage.input_tokens > 0, JSON.stringify(r.usage));
    const got = await client().responses.retrieve(r.id);
    assert.equal(got.id, r.id);
    assert.equal(textOf(got), textOf(r));
    const items = await client().responses.inputItems.list(r.id);
    assert.ok(items.data.length >= 1, JSON.stringify(items));

    const stream = await client().responses.create({ ...req, stream: true });
    let deltas = '';
    let final = null;
    for await (const e of stream) {
      if (e.type === 'response.output_text.delta') deltas += e.delta;
      if (e.type === 'response.completed' || e.type === 'response.incomplete') final = e.response;
    }
    assert.equal(deltas, textOf(r), 'temperature 0: the stream has the same text');
    assert.ok(final, 'a terminal event');
    assert.equal(textOf(final), textOf(r));

    const del = await client().responses.delete(r.id);
    assert.ok(del === undefined || del === null || del.deleted === true || typeof del === 'object');
    await assert.rejects(client().responses.retrieve(r.id), OpenAI.NotFoundError);
  });

  check('a previous_response_id chain with function_call_output is one session with cached tokens', async () => {
    const first = await client().responses.create({
      model: MODEL, input: 'List the files.', tools: [SHELL], tool_choice: 'required',
      max_output_tokens: 8, temperature: 0, prompt_cache_key: 'chain-1',
    });
    const call = first.output.find((i) => i.type === 'function_call');
    assert.ok(call, JSON.stringify(first.output));
    assert.equal(call.name, 'shell');
    assert.equal(typeof JSON.parse(call.arguments).command, 'string');
    const second = await client().responses.create({
      model: MODEL, previous_response_id: first.id, tools: [SHELL],
      input: [{ type: 'function_call_output', call_id: call.call_id, output: 'a.txt b.txt' }],
      max_output_tokens: 8, temperature: 0, prompt_cache_key: 'chain-1',
    }).withResponse();
    const r2 = second.data;
    assert.ok(r2.usage.input_tokens_details.cached_tokens > 0, JSON.stringify(r2.usage));
    const wf = second.response.headers.get('x-switchyard-workflow-id');
    const st = await getWorkflow(server, wf);
    assert.ok(st.nodes.some((n) => n.toolName === 'shell'), JSON.stringify(st.nodes));
  });

  check('errors are the SDK classes', async () => {
    await assert.rejects(client().responses.retrieve('resp_missing'), OpenAI.NotFoundError);
    await assert.rejects(
      client().responses.create({ model: MODEL, input: 'x', background: true }),
      (e) => e instanceof OpenAI.BadRequestError && /background/.test(e.message));
  });
});
