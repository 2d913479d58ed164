// The OpenAI-compatible front door (frontends/openai/openai_front.h) through the official `openai` npm
// SDK, against a live `switchyard serve` that this test starts: the CPU engine with the
// tiny random-weights model (configs/models/tiny-llama-4l.json) and an 8 MiB KV pool, on a
// free loopback port with a temporary data dir.
//
//   SWITCHYARD_BIN=build/bin/switchyard node --test tests/node/openai_sdk_test.mjs
//
// Dependencies: node:test, node:assert and the pinned `openai` package of
// tests/node/package.json (`npm ci` in tests/node; scripts/bootstrap.sh runs it). ctest runs
// it as node_openai_sdk (tests/CMakeLists.txt). SY_KEEP_DATA=1 keeps the data dir (and its
// server.log); the log's tail is printed when a check fails.
import { after, before, describe } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { check, getWorkflow as getWorkflowOf, sleep, startServer, stopServer } from './serve_fixture.mjs';

const getWorkflow = (id) => getWorkflowOf(server, id);
const MODEL = 'tiny-llama-4l';
const TOOL_WAIT_MS = 200;  // the client "runs" the tool this long between turns

const BASH_TOOL = {
  type: 'function',
  function: {
    name: 'bash',
    description: 'Run a shell command and return its output',
    parameters: {
      type: 'object',
      properties: { command: { type: 'string', description: 'the command line' } },
      required: ['command'],
    },
  },
};

let server;  // serve_fixture.mjs startServer()

function client(extra = {}) {
  return new OpenAI({
    baseURL: `${server.base}/v1`,
    apiKey: server.token,
    maxRetries: 0,  // the server's answers as they are: no SDK retries of 409/429/5xx
    timeout: 120_000,
    ...extra,
  });
}

// The assistant message as a client echoes it back into the conversation.
function echo(message) {
  const m = { role: 'assistant', content: message.content ?? null };
  if (message.tool_calls?.length) {
    m.tool_calls = message.tool_calls.map((c) => ({
      id: c.id, type: 'function', function: { name: c.function.name, arguments: c.function.arguments },
    }));
  }
  return m;
}

describe('openai SDK against switchyard serve', () => {
  before(async () => { server = await startServer(); });
  after(async () => { await stopServer(server); });

  check('models.list() returns the served model', async () => {
    const ids = [];
    for await (const m of client().models.list()) ids.push(m.id);
    assert.deepEqual(ids, [MODEL]);
  });

  check('models.retrieve() returns the model; an unknown one is NotFoundError', async () => {
    const m = await client().models.retrieve(MODEL);
    assert.equal(m.id, MODEL);
    assert.equal(m.object, 'model');
    await assert.rejects(client().models.retrieve('no-such-model'), OpenAI.NotFoundError);
  });

  check('chat.completions.create: non-streaming, then the same request streamed', async () => {
    const oa = client();
    const req = {
      model: MODEL,
      messages: [
        { role: 'system', content: 'You are terse.' },
        { role: 'user', content: 'Say something.' },
      ],
      temperature: 0,
      max_tokens: 24,
    };
    const r = await oa.chat.completions.create(req);
    assert.equal(r.object, 'chat.completion');
    assert.equal(r.model, MODEL);
    assert.equal(r.choices.length, 1);
    const choice = r.choices[0];
    assert.equal(choice.index, 0);
    assert.equal(choice.message.role, 'assistant');
    assert.equal(typeof choice.message.content, 'string');
    assert.ok(['stop', 'length'].includes(choice.finish_reason), `finish_reason ${choice.finish_reason}`);
    assert.ok(r.usage.prompt_tokens > 0, JSON.stringify(r.usage));
    assert.ok(r.usage.completion_tokens >= 1 && r.usage.completion_tokens <= 24, JSON.stringify(r.usage));
    assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);
    if (choice.finish_reason === 'length') {
      assert.equal(r.usage.completion_tokens, 24);
      assert.ok(choice.message.content.length > 0, 'text for 24 generated tokens');
    }

    const stream = await oa.chat.completions.create({
      ...req, stream: true, stream_options: { include_usage: true },
    });
    let text = '';
    let finish = null;
    let usage = null;
    let chunks = 0;
    let role = null;
    for await (const chunk of stream) {
      chunks++;
      assert.equal(chunk.object, 'chat.completion.chunk');
      assert.equal(chunk.model, MODEL);
      if (chunk.usage) {
        assert.equal(chunk.choices.length, 0, 'the usage chunk has no choices');
        usage = chunk.usage;
        continue;
      }
      assert.equal(usage, null, 'the usage chunk comes last');
      const c = chunk.choices[0];
      if (c.delta.role) role = c.delta.role;
      if (c.delta.content) text += c.delta.content;
      if (c.finish_reason) finish = c.finish_reason;
    }
    assert.ok(chunks >= 2, `${chunks} chunks`);
    assert.equal(role, 'assistant');
    assert.equal(text, choice.message.content, 'temperature 0: the stream has the same text');
    assert.equal(finish, choice.finish_reason);
    assert.ok(usage, 'a usage chunk (stream_options.include_usage)');
    assert.equal(usage.prompt_tokens, r.usage.prompt_tokens);
    assert.equal(usage.completion_tokens, r.usage.completion_tokens);
  });

  check('completions.create (legacy)', async () => {
    const oa = client();
    const r = await oa.completions.create({
      model: MODEL, prompt: 'Once upon a time', max_tokens: 16, temperature: 0,
    });
    assert.equal(r.object, 'text_completion');
    assert.equal(r.model, MODEL);
    assert.equal(r.choices.length, 1);
    assert.equal(typeof r.choices[0].text, 'string');
    assert.ok(['stop', 'length'].includes(r.choices[0].finish_reason));
    assert.ok(r.usage.prompt_tokens > 0 && r.usage.completion_tokens >= 1, JSON.stringify(r.usage));

    let text = '';
    const stream = await oa.completions.create({
      model: MODEL, prompt: 'Once upon a time', max_tokens: 16, temperature: 0, stream: true,
    });
    for await (const chunk of stream) text += chunk.choices[0]?.text ?? '';
    assert.equal(text, r.choices[0].text, 'temperature 0: the stream has the same text');
  });

  check('errors are the SDK classes', async () => {
    const msg = { model: MODEL, messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 };

    const bad = client({ apiKey: 'not-the-token' });
    await assert.rejects(bad.chat.completions.create(msg), (e) => {
      assert.ok(e instanceof OpenAI.AuthenticationError, `${e?.constructor?.name}: ${e?.message}`);
      assert.equal(e.status, 401);
      return true;
    });
    await assert.rejects(bad.models.list(), OpenAI.AuthenticationError);

    const oa = client();
    await assert.rejects(oa.chat.completions.create({ ...msg, model: 'no-such-model' }), (e) => {
      assert.ok(e instanceof OpenAI.NotFoundError, `${e?.constructor?.name}: ${e?.message}`);
      assert.equal(e.status, 404);
      return true;
    });
    await assert.rejects(oa.chat.completions.create({ ...msg, n: 2 }), (e) => {
      assert.ok(e instanceof OpenAI.BadRequestError, `${e?.constructor?.name}: ${e?.message}`);
      assert.equal(e.status, 400);
      assert.equal(e.param, 'n');
      return true;
    });
  });

  check('a 3-turn session with forced bash calls: the context is extended, waits are tool nodes', async () => {
    const sid = `sdk-tools-${process.pid}`;
    const oa = client({ defaultHeaders: { 'x-session-id': sid } });
    const messages = [
      { role: 'system', content: 'You are a coding agent. Use the bash tool.' },
      { role: 'user', content: 'List the files in the repository.' },
    ];
    const choices = [{ type: 'function', function: { name: 'bash' } }, 'required',
      { type: 'function', function: { name: 'bash' } }];
    let workflowId = null;
    const cached = [];
    const callIds = [];
    for (let turn = 0; turn < 3; turn++) {
      const { data, response } = await oa.chat.completions.create({
        model: MODEL, messages, tools: [BASH_TOOL], tool_choice: choices[turn],
        temperature: 0, max_tokens: 24,
      }).withResponse();
      const wf = response.headers.get('x-switchyard-workflow-id');
      assert.ok(wf, 'x-switchyard-workflow-id header');
      if (workflowId === null) workflowId = wf;
      assert.equal(wf, workflowId, 'every turn of the session is a node of one workflow');
      assert.equal(response.headers.get('x-switchyard-node-id'), `llm-${turn}`);

      const choice = data.choices[0];
      assert.equal(choice.finish_reason, 'tool_calls', `turn ${turn}`);
      assert.equal(choice.message.tool_calls?.length, 1, JSON.stringify(choice.message));
      const call = choice.message.tool_calls[0];
      assert.equal(call.type, 'function');
      assert.equal(call.function.name, 'bash');
      assert.ok(call.id && !callIds.includes(call.id), `a new call id: ${call.id}`);
      callIds.push(call.id);
      const args = JSON.parse(call.function.arguments);  // valid JSON with random weights
      assert.equal(typeof args.command, 'string', call.function.arguments);

      const details = data.usage.prompt_tokens_details;
      assert.ok(details && typeof details.cached_tokens === 'number', JSON.stringify(data.usage));
      cached.push(details.cached_tokens);
      if (turn > 0) {
        assert.ok(cached[turn] > cached[turn - 1],
          `turn ${turn}: cached_tokens ${cached[turn]} after ${cached[turn - 1]} (usage ${JSON.stringify(data.usage)})`);
        assert.ok(cached[turn] < data.usage.prompt_tokens, JSON.stringify(data.usage));
      }

      // "Run" the tool, then send its result back with the echoed call.
      await sleep(TOOL_WAIT_MS);
      messages.push(echo(choice.message));
      messages.push({ role: 'tool', tool_call_id: call.id, content: `ran: ${args.command.slice(0, 40)}\nexit 0` });
    }
    assert.ok(cached[1] > 0, `cached tokens per turn: ${cached}`);

    const wf = await getWorkflow(workflowId);
    console.log(`workflow ${workflowId}: cached tokens per turn ${JSON.stringify(cached)}; nodes ` +
      JSON.stringify(wf.nodes.map((n) => [n.id, n.kind, n.toolName ?? '', n.state, n.durationMs ?? 0])) +
      `; decisions ${JSON.stringify((wf.decisions ?? []).map((d) => d.line ?? d.kind))}`);
    const llm = wf.nodes.filter((n) => n.kind === 'LLM' || n.kind === 'NODE_KIND_LLM' || /^llm-/.test(n.id));
    assert.equal(llm.length, 3, JSON.stringify(wf.nodes));
    const bash = wf.nodes.filter((n) => n.toolName === 'bash');
    assert.equal(bash.length, 3, `a bash wait node per turn: ${JSON.stringify(wf.nodes)}`);
    const ended = bash.filter((n) => Number(n.finishedMs ?? 0) > 0);
    assert.ok(ended.length >= 2, `the waits of turns 0 and 1 ended: ${JSON.stringify(bash)}`);
    for (const n of ended) {
      assert.ok(Number(n.durationMs ?? 0) >= TOOL_WAIT_MS,
        `${n.id}: durationMs ${n.durationMs} < the client's ${TOOL_WAIT_MS} ms wait`);
    }
    const kinds = (wf.decisions ?? []).map((d) => d.kind);
    assert.ok(kinds.some((k) => ['keep', 'demote', 'discard'].includes(k)),
      `a tool-wait decision (keep/demote/discard) among ${JSON.stringify(kinds)}`);

    // Ending the session ends its last wait and closes the workflow.
    const del = await fetch(`${server.base}/v1/sessions/${encodeURIComponent(sid)}`, {
      method: 'DELETE', headers: { authorization: `Bearer ${server.token}` },
    });
    assert.equal(del.status, 200, await del.text());
    const closed = await getWorkflow(workflowId);
    assert.equal(closed.closed, true, JSON.stringify({ state: closed.state, closed: closed.closed }));
  });

  check('8 concurrent sessions on the 8 MiB pool answer as fresh requests do', async () => {
    // tiny-llama-4l's KV is 4 KiB a token (4 layers x 4 KV heads x 32 x K,V x FP32): the pool
    // holds 2048 tokens, and the 8 sessions' contexts grow to ~4000 together, so the scheduler
    // has to demote / discard some of them between turns.
    const SESSIONS = 8;
    const TURNS = 3;
    const filler = 'The quick brown fox jumps over the lazy dog. '.repeat(8);
    const fresh = client();
    const run = async (k) => {
      const oa = client();
      const sid = `sdk-conc-${process.pid}-${k}`;
      const messages = [
        { role: 'system', content: `Session ${k}: answer briefly. ${filler}` },
        { role: 'user', content: `Question ${k}.0: what is ${k} plus ${k}?` },
      ];
      const cached = [];
      let workflow = null;
      for (let turn = 0; turn < TURNS; turn++) {
        const req = { model: MODEL, messages: [...messages], temperature: 0, max_tokens: 16 };
        const { data: s, response } = await oa.chat.completions
          .create(req, { headers: { 'x-session-id': sid } }).withResponse();
        workflow ??= response.headers.get('x-switchyard-workflow-id');
        const f = await fresh.chat.completions.create(req);
        assert.equal(s.choices[0].message.content, f.choices[0].message.content,
          `session ${k} turn ${turn}: the session's answer differs from a fresh request's ` +
          `(session usage ${JSON.stringify(s.usage)}, fresh usage ${JSON.stringify(f.usage)})`);
        assert.equal(s.choices[0].finish_reason, f.choices[0].finish_reason);
        assert.equal(s.usage.prompt_tokens, f.usage.prompt_tokens);
        assert.equal(s.usage.completion_tokens, f.usage.completion_tokens);
        // A fresh request may find the session's blocks in the engine's prefix cache (the
        // same prompt): what it reports cached is then part of its prompt, never more.
        assert.ok((f.usage.prompt_tokens_details?.cached_tokens ?? 0) <= f.usage.prompt_tokens);
        cached.push(s.usage.prompt_tokens_details?.cached_tokens ?? 0);
        await sleep(50 + 25 * k);  // the client thinks a while: a wait the scheduler decides on
        messages.push(echo(s.choices[0].message));
        messages.push({ role: 'user', content: `Question ${k}.${turn + 1}: and then?` });
      }
      await fetch(`${server.base}/v1/sessions/${encodeURIComponent(sid)}`, {
        method: 'DELETE', headers: { authorization: `Bearer ${server.token}` },
      });
      const wf = await getWorkflow(workflow);
      return { cached, kinds: (wf.decisions ?? []).map((d) => d.kind) };
    };
    const results = await Promise.all(Array.from({ length: SESSIONS }, (_, k) => run(k)));
    const byKind = {};
    for (const r of results) for (const k of r.kinds) byKind[k] = (byKind[k] ?? 0) + 1;
    console.log(`cached tokens per session and turn: ${JSON.stringify(results.map((r) => r.cached))}; ` +
      `the sessions' decisions: ${JSON.stringify(byKind)}`);
    // Under contention a session may have to re-create its context (cached 0), but most turns
    // after the first extend it.
    const extended = results.flatMap((r) => r.cached.slice(1)).filter((c) => c > 0).length;
    assert.ok(extended > 0, `no turn extended its session's context: ${JSON.stringify(results)}`);
  });
});
