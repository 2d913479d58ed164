// What the OpenAI Agents SDK tests share (agents_sdk_test.mjs, agents_sdk_proxy_test.mjs):
// an agent with one function tool and modelSettings.toolChoice 'required' run once against
// a started server through @openai/agents (its OpenAI client recording the wire), and the
// check of the forced call's round trip. Exits 77 (skipped) when the packages are missing
// (agent_run.mjs).
import assert from 'node:assert/strict';
import { requireInstalled } from './agent_run.mjs';

// The engine of the forced call: the CPU engine, the demo model with random weights (its
// arguments generated under the schema's constraint).
export const FORCED = { engine: 'cpu', model: 'demo-qwen3-random' };
const MAX_TOKENS = 256;  // the demo model's answers end after 16 tokens on average

requireInstalled('node_modules/@openai/agents/package.json', 'node_modules/zod/package.json');
const { Agent, ModelBehaviorError, OpenAIProvider, Runner, setTracingDisabled, tool } =
  await import('@openai/agents');
export { ModelBehaviorError };
const { default: OpenAI } = await import('openai');
const { z } = await import('zod');

setTracingDisabled(true);  // no trace export (to api.openai.com by default)

// A `fetch` for the OpenAI client that keeps each request's JSON body, the response's JSON
// and its x-switchyard-workflow-id header.
function recordingFetch(log) {
  return async (url, init) => {
    const entry = { url: String(url), request: JSON.parse(init?.body ?? 'null') };
    log.push(entry);
    const res = await fetch(url, init);
    entry.status = res.status;
    entry.workflow = res.headers.get('x-switchyard-workflow-id');
    entry.response = await res.clone().json().catch(() => null);
    return res;
  };
}

// Runs the agent once against `server`; returns the SDK's result or error, the tool's
// calls and the wire log.
export async function runAgent(server) {
  const wire = [];
  const openAIClient = new OpenAI({
    baseURL: `${server.base}/v1`, apiKey: server.token, maxRetries: 0, fetch: recordingFetch(wire),
  });
  const runner = new Runner({ modelProvider: new OpenAIProvider({ openAIClient }) });
  const calls = [];
  const getWeather = tool({
    name: 'get_weather',
    description: 'The weather of a city',
    parameters: z.object({ city: z.string() }),
    execute: async ({ city }) => { calls.push(city); return `It is sunny in ${city}.`; },
  });
  const agent = new Agent({
    name: 'weather',
    instructions: 'Look the weather up with the tool, then answer in one sentence.',
    model: server.models[0],
    tools: [getWeather],
    modelSettings: {
      toolChoice: 'required', maxTokens: MAX_TOKENS, providerData: { prompt_cache_key: 'agents-sdk-test' },
    },
  });
  const t0 = Date.now();
  let result = null;
  let error = null;
  try {
    result = await runner.run(agent, 'What is the weather in Paris?', { maxTurns: 4 });
  } catch (e) {
    error = e;
  }
  console.log(`${JSON.stringify(server.engineSpec)}: ${wire.length} requests in ${Date.now() - t0} ms; ` +
    `tool calls ${JSON.stringify(calls)}; ${error ? `error: ${error.message}` : `final output: ${JSON.stringify(result.finalOutput)}`}`);
  return { result, error, calls, wire };
}

// The forced call and the tool's round trip, as the wire log shows them.
export function checkRoundTrip({ calls, wire }) {
  assert.ok(wire.length >= 2, `two requests at least: ${JSON.stringify(wire.map((w) => w.status))}`);
  const [first, second] = wire;
  assert.equal(first.status, 200, JSON.stringify(first.response));
  assert.equal(first.request.tool_choice, 'required');
  const call = first.response.output.find((o) => o.type === 'function_call');
  assert.ok(call, `the first answer is a function call: ${JSON.stringify(first.response.output)}`);
  assert.equal(call.name, 'get_weather');
  const args = JSON.parse(call.arguments);  // valid JSON, or this throws
  assert.equal(typeof args.city, 'string', call.arguments);
  assert.deepEqual(calls, [args.city], 'the SDK ran the tool once, with the call\'s arguments');
  const out = second.request.input.find((i) => i.type === 'function_call_output');
  assert.ok(out, `the second request carries the tool's output: ${JSON.stringify(second.request.input)}`);
  assert.equal(out.call_id, call.call_id);
  assert.notEqual(second.request.tool_choice, 'required', 'the SDK reset the tool choice');
  assert.equal(second.status, 200, JSON.stringify(second.response));
  const cached = second.response.usage?.input_tokens_details?.cached_tokens ?? 0;
  console.log(`second turn: ${cached} of ${second.response.usage?.input_tokens} prompt tokens read from the session`);
  assert.ok(cached > 0, `the second turn extends the session's context: ${JSON.stringify(second.response.usage)}`);
  return second.response;
}

