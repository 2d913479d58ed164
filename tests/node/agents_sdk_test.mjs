// The OpenAI Agents SDK (@openai/agents) unmodified against a live `switchyard serve` over
// the Responses API (the SDK's default): an agent with one function tool and
// modelSettings.toolChoice 'required'. The first turn is a forced call of the tool (the
// engine writes the call's header and closes the arguments, so they are valid JSON), the
// SDK runs the tool and sends its function_call_output back with the tool choice reset,
// and the run ends with the second answer as its final output. The OpenAI client the SDK
// uses records each request and response (its `fetch` option), so the test can check what
// went over the wire. `prompt_cache_key` (through modelSettings.providerData) names the
// session: the second turn extends the first one's context (cached_tokens > 0).
//
// Two servers, one after the other:
//  - FORCED (the CPU engine, the demo model with random weights): the forced call (its
//    arguments generated under the schema's constraint) and the tool's round trip, then a
//    final output (random text; the demo model's answers end after 16 tokens on average).
//  - FULL (the simulated engine): the whole run, final output included.
//
// The agent and the round trip's check are in agents_sdk_checks.mjs;
// agents_sdk_proxy_test.mjs runs them through a proxy. Run it inside a loopback-only
// network namespace (tests/agents/in_netns.sh):
//   SWITCHYARD_BIN=build/bin/switchyard tests/agents/in_netns.sh node tests/node/agents_sdk_test.mjs
// ctest runs it as node_agents_sdk. Exit 0 passed, 1 failed, 77 skipped (the package is
// not installed: agent_run.mjs).
import assert from 'node:assert/strict';
import { cappedAnswer } from './agent_run.mjs';
import { FORCED, ModelBehaviorError, checkRoundTrip, runAgent } from './agents_sdk_checks.mjs';
import { startServer, stopServer } from './serve_fixture.mjs';

// The servers' engines (see above); either may be switched to the other.
const FULL = { engine: 'simulated' };

const isIncomplete = (e) => e instanceof ModelBehaviorError && /response\.incomplete/.test(e.message);

// One server's scenario; returns a known gap's description, or null.
async function scenario(spec, check) {
  const server = await startServer(spec);
  server.engineSpec = spec;
  let ok = false;
  try {
    const gap = check(await runAgent(server));
    ok = true;
    return gap;
  } finally {
    await stopServer(server, { showLog: !ok });
  }
}

async function main() {
  await scenario(FORCED, (r) => {
    checkRoundTrip(r);
    if (r.error) throw r.error;
    assert.equal(typeof r.result.finalOutput, 'string');
    return null;
  });
  const gap = await scenario(FULL, (r) => {
    const second = checkRoundTrip(r);
    if (isIncomplete(r.error) && second.status === 'incomplete') {
      return `every simulated answer ends at the output cap (status "incomplete"), which the Agents SDK refuses: ${r.error.message}`;
    }
    if (r.error) throw r.error;
    assert.equal(typeof r.result.finalOutput, 'string');
    assert.ok(r.result.finalOutput.length > 0, 'a final output');
    assert.equal(r.result.finalOutput, second.output.find((o) => o.type === 'message').content[0].text);
    return null;
  });
  if (gap) cappedAnswer(gap);
  console.log('PASS: the Agents SDK ran its tool and finished its run against switchyard serve');
}

await main();
