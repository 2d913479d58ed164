// What the Node tests share: a live `switchyard serve` they start (the CPU engine, or the
// simulated one, on a free loopback port with a temporary data dir), a second one in proxy
// mode in front of it, their stop (printing the log's tail when a check failed), the native
// workflow API, and checks that remember a failure.
//
// SWITCHYARD_BIN names the binary (ctest sets it); SY_KEEP_DATA=1 keeps the data dir.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

// Whether a check failed (the server's log is printed at its stop then).
let failed = false;

// A test whose failure also prints the server's log (in stopServer).
export function check(name, fn) {
  test(name, async (t) => {
    try {
      await fn(t);
    } catch (e) {
      failed = true;
      throw e;
    }
  });
}

// Starts `switchyard serve --engine cpu` with the model shape `model` (a file of
// configs/models), or `--engine simulated` (which ignores `model`), and `args`; resolves
// once /healthz answers and the tenant token exists. `s.models`: the ids GET /v1/models
// lists.
export async function startServer({ engine = 'cpu', model = 'tiny-llama-4l', args = [] } = {}) {
  const engineArgs = engine === 'cpu'
    ? ['--engine', 'cpu', '--model', path.join(ROOT, `configs/models/${model}.json`), '--kv-pool-mib', '8']
    : ['--engine', engine];
  return serve([...engineArgs, ...args]);
}

// Starts `switchyard serve --upstream <upstream> --upstream-key <its token>` in front of
// `upstream` (a started server): proxy mode, no engine of its own — it orders and admits
// each call through its scheduler (its workflows hold the sessions, reported as the calls
// start and end), then forwards the request unchanged and passes the answer back. It has
// its own tenant token; `s.upstream` is the upstream. Stop it before the upstream.
export async function startProxy(upstream, { args = [] } = {}) {
  const s = await serve(['--upstream', upstream.base, '--upstream-key', upstream.token, ...args]);
  s.upstream = upstream;
  return s;
}

// `switchyard serve ARGS` on a free loopback port with a temporary data dir; resolves once
// /healthz answers and the tenant token exists.
async function serve(args) {
  const bin = process.env.SWITCHYARD_BIN;
  assert.ok(bin && fs.existsSync(bin), `SWITCHYARD_BIN ('${bin}') does not name the switchyard binary`);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sy_node_sdk_'));
  const port = await freePort();
  const logPath = path.join(dir, 'server.log');
  const log = fs.openSync(logPath, 'w');
  const proc = spawn(bin, [
    'serve', ...args, '--listen', `127.0.0.1:${port}`, '--data-dir', dir,
  ], { stdio: ['ignore', log, log] });
  const s = {
    proc, dir, port, base: `http://127.0.0.1:${port}`, token: '', models: [], logPath, exited: null,
  };
  proc.on('exit', (code, signal) => { s.exited = { code, signal }; });
  fs.closeSync(log);
  const tokenFile = path.join(dir, 'tokens', 'default');
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (s.exited) break;
    if (fs.existsSync(tokenFile)) {
      try {
        const r = await fetch(`${s.base}/healthz`, { signal: AbortSignal.timeout(1000) });
        if (r.ok) {
          s.token = fs.readFileSync(tokenFile, 'utf8').trim();
          if (s.token) {
            const m = await fetch(`${s.base}/v1/models`, { headers: { authorization: `Bearer ${s.token}` } });
            s.models = (await m.json()).data.map((e) => e.id);
            return s;
          }
        }
      } catch { /* not listening yet */ }
    }
    await sleep(50);
  }
  const tail = fs.readFileSync(logPath, 'utf8').slice(-4000);
  proc.kill('SIGKILL');
  throw new Error(`the server did not come up (exit: ${JSON.stringify(s.exited)}); log:\n${tail}`);
}

// Stops the server; its log's tail is printed when a check failed, or when `showLog`.
export async function stopServer(s, { showLog = false } = {}) {
  if (!s) return;
  if (!s.exited) {
    const done = new Promise((r) => s.proc.once('exit', r));
    s.proc.kill('SIGTERM');
    const t = setTimeout(() => s.proc.kill('SIGKILL'), 10_000);
    await done;
    clearTimeout(t);
  }
  if (failed || showLog) {
    const tail = fs.readFileSync(s.logPath, 'utf8').slice(-6000);
    console.error(`--- server log (${s.logPath}), last 6000 characters ---\n${tail}`);
  }
  if (process.env.SY_KEEP_DATA) console.error(`data dir kept: ${s.dir}`);
  else fs.rmSync(s.dir, { recursive: true, force: true });
}

// GET /v1/workflows/{id} (the native API; protobuf JSON: int64 fields are strings).
export async function getWorkflow(s, id) {
  const r = await fetch(`${s.base}/v1/workflows/${encodeURIComponent(id)}`, {
    headers: { authorization: `Bearer ${s.token}` },
  });
  const body = await r.text();
  assert.equal(r.status, 200, `GET /v1/workflows/${id}: ${r.status} ${body}`);
  return JSON.parse(body);
}
