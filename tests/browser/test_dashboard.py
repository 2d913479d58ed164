#!/usr/bin/env python3
"""The dashboard in headless Chromium against a live server.

Starts `switchyard serve` (SWITCHYARD_BIN) on a free loopback port with a temporary data
dir, creates a workflow and moves one node to RUNNING through the API, then loads
http://127.0.0.1:PORT/#token=... in `chromium --headless --dump-dom` and checks that
  - the page reported no console message at all (the page never logs, so any console
    line is an uncaught error, a CSP violation or a failed load) and no script error
    (<body data-errors="0">, empty error box);
  - the page got its data (<body data-loaded="1">) and the DOM shows the server's data:
    the workflow id, its node states and the cluster counts.
Exit 77 (ctest SKIP_RETURN_CODE) when chromium or the server binary is missing.
Environment: SWITCHYARD_BIN (required), CHROMIUM (default: chromium on PATH).
"""

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

SKIP = 77


def skip(reason):
    print("SKIP: " + reason)
    sys.exit(SKIP)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def call(base, method, path, token=None, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(base + path, data=data, method=method)
    if token:
        req.add_header("Authorization", "Bearer " + token)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.status, dict(r.headers), r.read().decode()


def start_server(binary, workdir):
    port = free_port()
    data_dir = os.path.join(workdir, "data")
    log = open(os.path.join(workdir, "server.log"), "w")
    proc = subprocess.Popen(
        [binary, "serve", "--listen", f"127.0.0.1:{port}", "--data-dir", data_dir],
        stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    token_file = os.path.join(data_dir, "tokens", "default")
    deadline = time.time() + 30
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}; see {log.name}")
        try:
            if os.path.exists(token_file) and call(base, "GET", "/healthz")[0] == 200:
                with open(token_file) as f:
                    return proc, log, base, f.read().strip()
        except (urllib.error.URLError, ConnectionError):
            pass
        time.sleep(0.05)
    proc.kill()
    raise RuntimeError("server did not start within 30 s")


def run_chromium(chromium, url, workdir):
    profile = os.path.join(workdir, "profile")
    cmd = [chromium, "--headless", "--disable-gpu", "--no-sandbox", "--disable-dev-shm-usage",
           "--no-first-run", "--no-default-browser-check", "--disable-extensions",
           "--disable-background-networking", "--user-data-dir=" + profile,
           "--enable-logging=stderr", "--v=0",
           # Run the page's timers and fetches for 5 s of virtual time before dumping
           # the DOM (virtual time does not advance while a fetch is pending).
           "--virtual-time-budget=5000", "--dump-dom", url]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=180,
                       env=dict(os.environ, HOME=workdir))
    return r.returncode, r.stdout, r.stderr


def main():
    binary = os.environ.get("SWITCHYARD_BIN", "")
    chromium = os.environ.get("CHROMIUM") or shutil.which("chromium")
    if not chromium:
        skip("chromium is not installed (scripts/bootstrap.sh --with-browser installs it)")
    if not binary or not os.path.exists(binary):
        skip(f"SWITCHYARD_BIN ('{binary}') does not name the switchyard binary")
    workdir = tempfile.mkdtemp(prefix="sy_browser_")
    proc = log = None
    failures = []
    try:
        proc, log, base, token = start_server(binary, workdir)
        # The page itself: no auth, HTML, a policy that forbids other origins.
        status, headers, html = call(base, "GET", "/")
        lower = {k.lower(): v for k, v in headers.items()}
        if status != 200 or not lower.get("content-type", "").startswith("text/html"):
            failures.append(f"GET / gave {status} {lower.get('content-type')}")
        if "default-src 'none'" not in lower.get("content-security-policy", ""):
            failures.append("GET / has no restrictive Content-Security-Policy")
        # Server data for the page to show.
        wf = {"nodes": [
            {"id": "fetch", "kind": "TOOL", "toolName": "Grep"},
            {"id": "answer", "kind": "LLM", "deps": ["fetch"], "modelId": "Llama-3.1-8B",
             "cacheRefs": [{"context": "main", "mode": "CREATE"}],
             "hints": {"promptTokens": 1000, "extendTokens": 1000, "maxOutputTokens": 100}}]}
        status, _, body = call(base, "POST", "/v1/workflows", token, wf)
        wf_id = json.loads(body)["workflowId"]
        call(base, "POST", f"/v1/workflows/{wf_id}/events", token,
             {"nodeId": "fetch", "type": "TOOL_STARTED"})
        cluster = json.loads(call(base, "GET", "/v1/cluster", token)[2])
        detail = json.loads(call(base, "GET", f"/v1/workflows/{wf_id}", token)[2])

        rc, dom, err = run_chromium(chromium, f"{base}/#token={token}", workdir)
        if rc != 0:
            failures.append(f"chromium exited with {rc}: {err[-2000:]}")
        console = [l for l in err.splitlines() if ":CONSOLE" in l]
        if console:
            failures.append("console messages (the page never logs):\n  " + "\n  ".join(console))
        checks = {
            "page loaded its data (data-loaded=1)": r'<body[^>]*data-loaded="1"',
            "no script errors (data-errors=0)": r'<body[^>]*data-errors="0"',
            "error box is empty": r'<div id="errors"></div>',
            "workflow id shown": re.escape(wf_id),
            "node 'fetch' shown RUNNING": r"fetch: RUNNING",
            "node 'answer' shown PENDING": r"answer: PENDING",
            "workflow state shown": r">RUNNING<",
            "cluster count of workflows": r'id="stat-total"><b>1</b>',
            "token kept out of the page": None,
        }
        # Whatever the server reports beyond that (tiers, links, KV, decisions) is shown.
        for t in cluster.get("tiers", []):
            if t.get("tier"):
                checks[f"tier '{t['tier']}' shown"] = ">" + re.escape(t["tier"]) + "<"
        for l in cluster.get("links", []):
            if l.get("name"):
                checks[f"link '{l['name']}' shown"] = ">" + re.escape(l["name"]) + "<"
        for d in detail.get("decisions", [])[-5:]:
            if d.get("kind"):
                checks[f"decision '{d['kind']}' shown"] = ">" + re.escape(d["kind"]) + "<"
        for what, pattern in checks.items():
            ok = token not in dom if pattern is None else re.search(pattern, dom) is not None
            if not ok:
                failures.append("DOM check failed: " + what)
        if failures:
            print("--- DOM (before the script) ---\n" + dom.split("<script>")[0][-8000:])
    finally:
        if proc:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                failures.append("server did not stop on SIGTERM")
            if proc.returncode not in (0, -15):
                failures.append(f"server exited with {proc.returncode}")
        if log:
            log.close()
        shutil.rmtree(workdir, ignore_errors=True)
    for f in failures:
        print("FAIL: " + f)
    if failures:
        return 1
    print("PASS: dashboard loaded in headless Chromium without console errors and shows "
          "workflow " + wf_id)
    return 0


if __name__ == "__main__":
    sys.exit(main())
