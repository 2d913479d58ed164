#!/usr/bin/env python3
"""The dashboard in headless Chromium against a live server.

Starts `switchyard serve` (SWITCHYARD_BIN) on a free loopback port with a temporary data
dir, creates a workflow and moves one node to RUNNING through the API, then loads
http://127.0.0.1:PORT/#token=... in `chromium --headless --dump-dom` and checks that
  - the page reported no console message at all (the page never logs, so any console
    line is an uncaught error, a CSP violation or a failed load) and no script error
    (<body data-errors="0">, empty error box);
  - the page got its data (<body data-loaded="1">) and the DOM shows the server's data:
    the workflow id, its node states and the cluster counts;
  - numbers are formatted for people: the page's text has no long raw floats and no raw
    byte counts, and shows sizes in KiB/MiB/GiB, rates in GB/s, durations and percents;
  - the charts over time (tier occupancy, link use by class, queue depth) have lines with
    a point per poll (several polls ran);
  - the timeline of a workflow (selected with #workflow=) whose context was demoted during
    a tool wait (small HBM: --config with hbmBytesPerWorker) and prefetched for the next
    call has a row per node and a row per transfer.
Exit 77 (ctest SKIP_RETURN_CODE) when chromium or the server binary is missing.
Environment: SWITCHYARD_BIN (required), CHROMIUM (default: chromium on PATH).
"""

import html
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
    # A small HBM (1.25 GiB per worker): the "big" workflow's long tool wait demotes.
    config = os.path.join(workdir, "serve.json")
    with open(config, "w") as f:
        json.dump({"hbmBytesPerWorker": str(1280 << 20)}, f)
    proc = subprocess.Popen(
        [binary, "serve", "--config", config, "--listen", f"127.0.0.1:{port}",
         "--data-dir", data_dir],
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
           "--virtual-time-budget=7000", "--dump-dom", url]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=180,
                       env=dict(os.environ, HOME=workdir))
    return r.returncode, r.stdout, r.stderr


BIG = {"id": "big", "nodes": [
    {"id": "llm-0", "kind": "LLM", "modelId": "Llama-3.1-8B",
     "cacheRefs": [{"context": "main", "mode": "CREATE"}],
     "hints": {"promptTokens": 8000, "extendTokens": 8000, "maxOutputTokens": 4}},
    {"id": "bash", "kind": "TOOL", "toolName": "Bash", "deps": ["llm-0"],
     "hints": {"expectedDurationMs": 600000}},
    {"id": "llm-1", "kind": "LLM", "modelId": "Llama-3.1-8B", "deps": ["bash"],
     "cacheRefs": [{"context": "main", "mode": "EXTEND"}],
     "hints": {"promptTokens": 8300, "extendTokens": 300, "maxOutputTokens": 4}}]}


def wait_for(base, token, wf_id, pred, what):
    deadline = time.time() + 30
    while time.time() < deadline:
        s = json.loads(call(base, "GET", f"/v1/workflows/{wf_id}", token)[2])
        if pred(s):
            return s
        time.sleep(0.02)
    raise RuntimeError(f"workflow {wf_id}: timed out waiting for {what}")


def node_state(s, node):
    return next((n.get("state") for n in s.get("nodes", []) if n.get("id") == node), None)


def run_big(base, token):
    """Runs "big" through a demotion during its tool wait and a prefetch; its timeline."""
    call(base, "POST", "/v1/workflows", token, BIG)
    wait_for(base, token, "big", lambda s: node_state(s, "llm-0") == "NODE_SUCCEEDED",
             "llm-0 to succeed")
    call(base, "POST", "/v1/workflows/big/events", token, {"nodeId": "bash", "type": "TOOL_STARTED"})
    wait_for(base, token, "big",
             lambda s: any(k.get("context") == "main" and not k.get("inFlight")
                           and k.get("tier") not in (None, "hbm") for k in s.get("kv", [])),
             "main to leave HBM")
    call(base, "POST", "/v1/workflows/big/events", token, {"nodeId": "bash", "type": "TOOL_FINISHED"})
    call(base, "POST", "/v1/workflows/big:close", token, {})
    detail = wait_for(base, token, "big", lambda s: s.get("state") == "WORKFLOW_COMPLETED",
                      "completion")
    timeline = json.loads(call(base, "GET", "/v1/workflows/big/timeline", token)[2])
    return detail, timeline


def page_text(dom):
    """The text a user reads: the DOM without scripts, styles and tags."""
    body = re.sub(r"<(script|style)\b.*?</\1>", " ", dom, flags=re.S | re.I)
    return html.unescape(re.sub(r"<[^>]+>", " ", body))


def chart_points(dom, chart_id):
    """The most points of a line in the chart `chart_id` (0 when it has none)."""
    at = dom.find(f'id="{chart_id}"')
    if at < 0:
        return 0
    seg = dom[at:dom.find("</figure>", at)]
    return max([int(n) for n in re.findall(r'<polyline[^>]*data-n="(\d+)"', seg)] or [0])


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
        detail, timeline = run_big(base, token)
        cluster = json.loads(call(base, "GET", "/v1/cluster", token)[2])

        rc, dom, err = run_chromium(chromium, f"{base}/#token={token}&workflow=big", workdir)
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
            "cluster count of workflows": (r'id="stat-total"><b>'
                                           + str(cluster["workflows"]["total"]) + "</b>"),
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
        # The timeline of "big": a row per node, a row per transfer (demote and prefetch).
        for n in ("llm-0", "bash", "llm-1"):
            checks[f"timeline row of node {n}"] = r'<g class="tl-row tl-node" data-node="' + n + '"'
        moves = timeline.get("transfers", [])
        if len(moves) < 2:
            failures.append("the API timeline of big has fewer than 2 transfers: " + json.dumps(timeline))
        for x in moves:
            checks[f"timeline row of transfer {x['transferId']} ({x.get('kind')})"] = (
                r'<g class="tl-row tl-transfer" data-transfer="' + str(x["transferId"]) + '"')
        # Formatted numbers.
        checks["a size in KiB/MiB/GiB"] = r"\d (KiB|MiB|GiB)\b"
        checks["a rate in GB/s"] = r"\d GB/s"
        checks["a duration in us/ms"] = r"\d (µs|ms)\b"
        checks["a percentage"] = r"\d %"
        text = page_text(dom)
        for what, pattern in (("a long raw float", r"\d+\.\d{5,}"),
                              ("a raw count of 7+ digits", r"(?<![\w.])\d{7,}(?!\w)")):
            hits = re.findall(pattern, text)
            if hits:
                failures.append(f"page text has {what}: {hits[:5]}")
        for chart in ("chart-tiers", "chart-links", "chart-queue"):
            n = chart_points(dom, chart)
            if n < 2:
                failures.append(f"{chart}: a line with {n} points (want >= 2 after several polls)")
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
