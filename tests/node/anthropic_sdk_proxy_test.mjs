// The Anthropic Messages front door in proxy mode through the official `@anthropic-ai/sdk`
// npm SDK: a `switchyard serve --upstream` (serve_fixture.mjs startProxy: no engine, it
// orders and admits each call, then forwards it unchanged) in front of a second one with
// the CPU engine. The checks of anthropic_sdk_checks.mjs, through the proxy; and the
// proxy's answers are the upstream's (same text at temperature 0), its workflows hold the
// sessions with their tool waits named after the tool, streamed answers included.
//
//   SWITCHYARD_BIN=build/bin/switchyard node --test tests/node/anthropic_sdk_proxy_test.mjs
//
// ctest runs it as node_anthropic_sdk_proxy (tests/CMakeLists.txt).
import { after, before, describe } from 'node:test';
import assert from 'node:assert/strict';
import {
  SAY, client, countTokens, createThenStream, forcedToolSession, notFoundError, textOf,
} from './anthropic_sdk_checks.mjs';
import { check, getWorkflow, startProxy, startServer, stopServer } from './serve_fixture.mjs';

let upstream;
let proxy;

describe('@anthropic-ai/sdk against switchyard serve --upstream (proxy mode)', () => {
  before(async () => {
    upstream = await startServer();
    proxy = await startProxy(upstream);
  });
  after(async () => {
    await stopServer(proxy);
    await stopServer(upstream);
  });

  check('create and the streamed accumulator through the proxy: the upstream\'s text, the proxy\'s workflows', async () => {
    const { text, workflows } = await createThenStream(proxy);
    assert.equal(text, textOf(await client(upstream).messages.create(SAY)), 'temperature 0: as direct');
    for (const wf of workflows) {
      const st = await getWorkflow(proxy, wf);
      assert.ok(st.nodes.some((n) => n.id.startsWith('llm-')), JSON.stringify(st.nodes));
    }
  });

  check('a streamed forced tool_use session through the proxy: its second turn at once, the waits named Bash', async () => {
    await forcedToolSession(proxy, { session: 'proxy-session-1', stream: true });
  });

  check('countTokens through the proxy counts what create is charged', async () => {
    await countTokens(proxy);
  });

  check('the upstream\'s errors are the SDK classes', async () => { await notFoundError(proxy); });
});
