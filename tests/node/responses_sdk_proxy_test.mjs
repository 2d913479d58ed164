// The OpenAI Responses front door in proxy mode through the official `openai` npm SDK: a
// `switchyard serve --upstream` (serve_fixture.mjs startProxy: no engine, it orders and
// admits each POST /v1/responses, then forwards it unchanged; the other routes go to the
// upstream as they came) in front of a second one with the CPU engine. The checks of
// responses_sdk_checks.mjs, through the proxy; and the proxy's answers are the upstream's
// (same text at temperature 0), its workflows hold the sessions with their tool waits named
// after the function, streamed answers included.
//
//   SWITCHYARD_BIN=build/bin/switchyard node --test tests/node/responses_sdk_proxy_test.mjs
//
// ctest runs it as node_responses_sdk_proxy (tests/CMakeLists.txt).
import { after, before, describe } from 'node:test';
import assert from 'node:assert/strict';
import {
  SAY, client, createRetrieveStreamDelete, functionCallChain, textOf,
} from './responses_sdk_checks.mjs';
import { check, getWorkflow, startProxy, startServer, stopServer } from './serve_fixture.mjs';

let upstream;
let proxy;

describe('openai SDK responses.* against switchyard serve --upstream (proxy mode)', () => {
  before(async () => {
    upstream = await startServer();
    proxy = await startProxy(upstream);
  });
  after(async () => {
    await stopServer(proxy);
    await stopServer(upstream);
  });

  check('create, retrieve, stream and delete through the proxy: the upstream\'s text, the proxy\'s workflows', async () => {
    const { text, workflows } = await createRetrieveStreamDelete(proxy);
    assert.equal(text, textOf(await client(upstream).responses.create(SAY)), 'temperature 0: as direct');
    for (const wf of workflows) {
      const st = await getWorkflow(proxy, wf);
      assert.ok(st.nodes.some((n) => n.id.startsWith('llm-')), JSON.stringify(st.nodes));
    }
  });

  check('a streamed previous_response_id chain through the proxy: its second turn at once, the wait named shell', async () => {
    await functionCallChain(proxy, { key: 'proxy-chain-1', stream: true });
  });
});
