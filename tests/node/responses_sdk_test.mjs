// The OpenAI Responses front door (frontends/responses/responses_front.h) through the
// official `openai` npm SDK's responses.* calls, against a live `switchyard serve` this test
// starts (serve_fixture.mjs: the CPU engine, the tiny random-weights model). The checks are
// in responses_sdk_checks.mjs; responses_sdk_proxy_test.mjs runs them through a proxy.
//
//   SWITCHYARD_BIN=build/bin/switchyard node --test tests/node/responses_sdk_test.mjs
//
// ctest runs it as node_responses_sdk (tests/CMakeLists.txt).
import { after, before, describe } from 'node:test';
import { createRetrieveStreamDelete, errorClasses, functionCallChain } from './responses_sdk_checks.mjs';
import { check, startServer, stopServer } from './serve_fixture.mjs';

let server;

describe('openai SDK responses.* against switchyard serve', () => {
  before(async () => { server = await startServer(); });
  after(async () => { await stopServer(server); });

  check('responses.create, retrieve, input_items and delete; the same request streamed', async () => {
    await createRetrieveStreamDelete(server);
  });

  check('a previous_response_id chain with function_call_output is one session with cached tokens', async () => {
    await functionCallChain(server, { key: 'chain-1' });
  });

  check('the same chain streamed: its second turn at once, the wait named shell', async () => {
    await functionCallChain(server, { key: 'chain-2', stream: true });
  });

  check('errors are the SDK classes', async () => { await errorClasses(server); });
});
