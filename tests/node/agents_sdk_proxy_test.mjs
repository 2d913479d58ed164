// The OpenAI Agents SDK (@openai/agents) unmodified against Switchyard in proxy mode: a
// `switchyard serve --upstream` (serve_fixture.mjs startProxy: no engine, it orders and
// admits each call, then forwards it unchanged) in front of a second one with the CPU
// engine and the demo model (random weights; agents_sdk_checks.mjs FORCED). One agent run
// through the proxy: the forced call of the tool, the tool's round trip (its
// function_call_output chained with previous_response_id), a final output; both turns in
// one workflow of the proxy, whose tool wait is named after the tool.
//
// Run it inside a loopback-only network namespace (tests/agents/in_netns.sh):
//   SWITCHYARD_BIN=build/bin/switchyard tests/agents/in_netns.sh node tests/node/agents_sdk_proxy_test.mjs
// ctest runs it as node_agents_sdk_proxy. Exit 0 passed, 1 failed, 77 skipped (the package
// is not installed: agent_run.mjs).
import assert from 'node:assert/strict';
import { FORCED, checkRoundTrip, runAgent } from './agents_sdk_checks.mjs';
import { getWorkflow, startProxy, startServer, stopServer } from './serve_fixture.mjs';

const upstream = await startServer(FORCED);
let proxy = null;
let ok = false;
try {
  proxy = await startProxy(upstream);
  proxy.engineSpec = { proxyOf: FORCED };
  const r = await runAgent(proxy);
  checkRoundTrip(r);
  if (r.error) throw r.error;
  assert.equal(typeof r.result.finalOutput, 'string');
  const workflows = new Set(r.wire.map((w) => w.workflow));
  assert.equal(workflows.size, 1, `one workflow of the proxy: ${JSON.stringify([...workflows])}`);
  const [wf] = workflows;
  assert.ok(wf, 'x-switchyard-workflow-id');
  const st = await getWorkflow(proxy, wf);
  assert.ok(st.nodes.some((n) => n.toolName === 'get_weather'), JSON.stringify(st.nodes));
  ok = true;
} finally {
  if (proxy) await stopServer(proxy, { showLog: !ok });
  await stopServer(upstream, { showLog: !ok });
}
console.log('PASS: the Agents SDK ran its tool and finished its run through switchyard serve --upstream');
