// The Anthropic Messages front door (frontends/anthropic/anthropic_front.h) through the
// official `@anthropic-ai/sdk` npm SDK, against a live `switchyard serve` this test starts
// (serve_fixture.mjs: the CPU engine, the tiny random-weights model). The checks are in
// anthropic_sdk_checks.mjs; anthropic_sdk_proxy_test.mjs runs them through a proxy.
//
//   SWITCHYARD_BIN=build/bin/switchyard node --test tests/node/anthropic_sdk_test.mjs
//
// ctest runs it as node_anthropic_sdk (tests/CMakeLists.txt).
import { after, before, describe } from 'node:test';
import {
  authenticationError, badRequestError, countTokens, createThenStream, forcedToolSession,
  notFoundError,
} from './anthropic_sdk_checks.mjs';
import { check, startServer, stopServer } from './serve_fixture.mjs';

let server;

describe('@anthropic-ai/sdk against switchyard serve', () => {
  before(async () => { server = await startServer(); });
  after(async () => { await stopServer(server); });

  check('messages.create, then the same request streamed with the SDK accumulator', async () => {
    await createThenStream(server);
  });

  check('countTokens counts what create is charged', async () => { await countTokens(server); });

  check('a forced tool_use, its tool_result turn: one workflow, the wait named Bash, cache reads', async () => {
    await forcedToolSession(server, { session: 'sdk-session-1' });
  });

  check('a streamed forced tool_use session: its second turn at once, the waits named Bash', async () => {
    await forcedToolSession(server, { session: 'sdk-session-2', stream: true });
  });

  check('errors are the SDK classes', async () => {
    await authenticationError(server);
    await notFoundError(server);
    await badRequestError(server);
  });
});
