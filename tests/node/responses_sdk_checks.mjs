// The checks of the OpenAI Responses front door (frontends/responses/responses_front.h)
// through the official `openai` npm SDK's responses.* calls, against a started server: the
// CPU engine's (responses_sdk_test.mjs) or a proxy's in front of one
// (responses_sdk_proxy_test.mjs). Each takes the server (serve_fixture.mjs) and asserts.
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { getWorkflow } from './serve_fixture.mjs';

export { OpenAI };
export const MODEL = 'tiny-llama-4l';
export const SHELL = {
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

export function client(server) {
  return new OpenAI({ baseURL: `${server.base}/v1`, apiKey: server.token, maxRetries: 0, timeout: 120_000 });
}

export const textOf = (r) => r.output.filter((i) => i.type === 'message')
  .flatMap((m) => m.content).filter((c) => c.type === 'output_text').map((c) => c.text).join('');

// A request at temperature 0 (same answer each time on the same engine).
export const SAY = { model: MODEL, instructions: 'Be terse.', input: 'Say something.', max_output_tokens: 16, temperature: 0 };

// responses.create with stream: true; the final response (response.completed or
// .incomplete), the text of the deltas and the HTTP response.
export async function streamed(server, req) {
  const { data: stream, response } = await client(server).responses.create({ ...req, stream: true }).withResponse();
  let deltas = '';
  let final = null;
  for await (const e of stream) {
    if (e.type === 'response.output_text.delta') deltas += e.delta;
    if (e.type === 'response.completed' || e.type === 'response.incomplete') final = e.response;
  }
  assert.ok(final, 'a terminal event');
  return { final, deltas, response };
}

// responses.create, retrieve, input_items, the same request streamed, delete. Returns the
// text and the answers' x-switchyard-workflow-id headers.
export async function createRetrieveStreamDelete(server) {
  const { data: r, response } = await client(server).responses.create(SAY).withResponse();
  assert.equal(r.object, 'response');
  assert.ok(['completed', 'incomplete'].includes(r.status), r.status);
  assert.equal(r.model, MODEL);
  assert.ok(r.usage.input_tokens > 0, JSON.stringify(r.usage));
  const got = await client(server).responses.retrieve(r.id);
  assert.equal(got.id, r.id);
  assert.equal(textOf(got), textOf(r));
  const items = await client(server).responses.inputItems.list(r.id);
  assert.ok(items.data.length >= 1, JSON.stringify(items));

  const s = await streamed(server, SAY);
  assert.equal(s.deltas, textOf(r), 'temperature 0: the stream has the same text');
  assert.equal(textOf(s.final), textOf(r));

  const del = await client(server).responses.delete(r.id);
  assert.ok(del === undefined || del === null || del.deleted === true || typeof del === 'object');
  await assert.rejects(client(server).responses.retrieve(r.id), OpenAI.NotFoundError);
  const workflows = [response, s.response].map((h) => h.headers.get('x-switchyard-workflow-id'));
  return { text: textOf(r), workflows };
}

// One request, whole or streamed: the response and the HTTP response.
async function create(server, req, stream) {
  if (stream) {
    const { final, response } = await streamed(server, req);
    return { r: final, response };
  }
  const { data, response } = await client(server).responses.create(req).withResponse();
  return { r: data, response };
}

// A previous_response_id chain: a forced call of shell, then its function_call_output (sent
// as soon as the first answer ended), under one prompt_cache_key: one workflow (the
// server's) whose tool wait is named shell; the second turn reads the session's cache.
export async function functionCallChain(server, { key, stream = false }) {
  const first = await create(server, {
    model: MODEL, input: 'List the files.', tools: [SHELL], tool_choice: 'required',
    max_output_tokens: 8, temperature: 0, prompt_cache_key: key,
  }, stream);
  const call = first.r.output.find((i) => i.type === 'function_call');
  assert.ok(call, JSON.stringify(first.r.output));
  assert.equal(call.name, 'shell');
  assert.equal(typeof JSON.parse(call.arguments).command, 'string');
  const second = await create(server, {
    model: MODEL, previous_response_id: first.r.id, tools: [SHELL],
    input: [{ type: 'function_call_output', call_id: call.call_id, output: 'a.txt b.txt' }],
    max_output_tokens: 8, temperature: 0, prompt_cache_key: key,
  }, stream);
  assert.ok(second.r.usage.input_tokens_details.cached_tokens > 0, JSON.stringify(second.r.usage));
  const wf = second.response.headers.get('x-switchyard-workflow-id');
  assert.equal(first.response.headers.get('x-switchyard-workflow-id'), wf, 'one workflow per session');
  const st = await getWorkflow(server, wf);
  assert.ok(st.nodes.some((n) => n.toolName === 'shell'), JSON.stringify(st.nodes));
  return wf;
}

export async function errorClasses(server) {
  await assert.rejects(client(server).responses.retrieve('resp_missing'), OpenAI.NotFoundError);
  await assert.rejects(
    client(server).responses.create({ model: MODEL, input: 'x', background: true }),
    (e) => e instanceof OpenAI.BadRequestError && /background/.test(e.message));
}
