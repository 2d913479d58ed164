#!/usr/bin/env python3
"""Plays a Switchyard trace against a running server with the project's client and writes
what bench_fidelity compares as JSON.

The real half of `scripts/bench.sh fidelity`: clients/python/run_workload.py's Agent loop
(submit at the arrival time, append nodes as their predecessors succeed, real sleeps for
tool waits, close), with its time scale at 1 (the trace's times are already scaled by
`switchyard convert --time-scale`) and a 10 ms poll instead of the script's 50 ms, so that
the client's own reaction time stays small against the workflows' JCTs. Writes
{"jct_s": {workflow id without the client's suffix: seconds}, "states": {...},
 "decisions_by_kind": {...}, "bytes_moved_by_tier": {...}, "wall_s": ...,
 "ttft_s": [...], "started_to_first_token_s": [...], "call_overhead_s": [...],
 "tool_overhead_s": [...]}.

From the last status of each workflow the client read (GET /v1/workflows/{id}, kept as it
polls: node startedMs / finishedMs / firstTokenMs, the workflow's arrivalMs):
  ttft_s                    per LLM call: firstTokenMs - ready, ready = the latest of the
                            workflow's arrival and its dependencies' finishedMs (replay's
                            definition: replay/replay.cc);
  started_to_first_token_s  per LLM call: firstTokenMs - startedMs (the service's placement
                            to the engine's first token);
  call_overhead_s           per LLM call the trace reveals after another node R
                            (revealed_after): startedMs - finishedMs(R) - the longest of its
                            tool dependencies' waits as the service measured them (their
                            finishedMs - startedMs) — what the real path adds between a
                            call's end and the next call's start beyond the tool waits (the
                            client's poll, the append, the tools' start reports, their HTTP
                            round trips and durable commits): ReplayCluster.callOverheadS;
  tool_overhead_s           per tool: finishedMs - startedMs - its recorded duration — the
                            client's latency inside the wait (its poll noticing the end, the
                            end report), which the service counts as the tool's duration:
                            ReplayCluster.toolOverheadS.
Standard library only.

    python3 bench/fidelity/play_trace.py --url http://127.0.0.1:PORT --token T \\
        --trace trace.jsonl --out real.json [--poll 0.01] [--timeout 900]
"""

import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "clients", "python"))

import run_workload  # noqa: E402
from switchyard_client import Client  # noqa: E402


def trace_id(agent_id):
    """The trace's workflow id: the client adds '-<6 hex>' to make ids unique per run."""
    return agent_id.rsplit("-", 1)[0]


class RecordingClient(Client):
    """The project's client, keeping the last status read per workflow and the wall time
    (ms since the epoch) each workflow was submitted."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.last = {}
        self.submitted_ms = {}

    def submit_workflow(self, workflow, idempotency_key=None):
        self.submitted_ms.setdefault(workflow["id"], time.time() * 1000.0)
        return super().submit_workflow(workflow, idempotency_key=idempotency_key)

    def get(self, workflow_id):
        status = super().get(workflow_id)
        self.last[workflow_id] = status
        return status


def ms(d, key):
    """An int64 field of proto3 JSON (a string, or absent for 0)."""
    return float(d.get(key, 0) or 0)


def node_timings(record, status, submitted_ms):
    """(ttft, started->first token, call overhead, tool overhead) lists of one played
    workflow."""
    nodes = {n["id"]: n for n in record["workflow"].get("nodes", [])}
    actuals = {a["node_id"]: a for a in record.get("actuals", [])}
    seen = {n["id"]: n for n in status.get("nodes", [])}
    arrival = ms(status, "arrivalMs") or submitted_ms
    ttft, to_first, overhead, tool_overhead = [], [], [], []

    def measured(tool_id):  # a tool's wait as the service measured it, ms
        t = seen.get(tool_id, {})
        return ms(t, "finishedMs") - ms(t, "startedMs")

    for nid, n in nodes.items():
        s = seen.get(nid)
        if n.get("kind") == "TOOL" and s is not None and ms(s, "startedMs") > 0 and \
                ms(s, "finishedMs") > 0:
            tool_overhead.append(
                (measured(nid) - float(actuals.get(nid, {}).get("duration_ms", 0))) / 1000.0)
        if n.get("kind") != "LLM" or s is None:
            continue
        first, started = ms(s, "firstTokenMs"), ms(s, "startedMs")
        if first <= 0:
            continue
        ready = arrival
        for d in n.get("deps", []):
            if d in seen:
                ready = max(ready, ms(seen[d], "finishedMs"))
        ttft.append(max(0.0, first - ready) / 1000.0)
        if started > 0:
            to_first.append(max(0.0, first - started) / 1000.0)
        after = actuals.get(nid, {}).get("revealed_after")
        if after and after in seen and started > 0 and ms(seen[after], "finishedMs") > 0:
            tools = [measured(d) for d in n.get("deps", [])
                     if nodes.get(d, {}).get("kind") == "TOOL" and d in seen]
            overhead.append((started - ms(seen[after], "finishedMs") - max(tools, default=0.0))
                            / 1000.0)
    return ttft, to_first, overhead, tool_overhead


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--url", required=True)
    p.add_argument("--token", required=True)
    p.add_argument("--trace", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--poll", type=float, default=0.01)
    p.add_argument("--timeout", type=float, default=900.0)
    a = p.parse_args()
    t0 = time.monotonic()
    client = RecordingClient(a.url, a.token)
    records = run_workload.load_trace(a.trace)
    with open(os.devnull, "w") as quiet:
        agents, cluster = run_workload.run(client, records, 1.0, "service", poll=a.poll,
                                           out=quiet, timeout=a.timeout)
    by_trace_id = {r["workflow"]["id"]: r for r in records}
    ttft, to_first, overhead, tool_overhead = [], [], [], []
    for x in agents:
        rec, status = by_trace_id.get(trace_id(x.id)), client.last.get(x.id)
        if rec is None or status is None or x.state != "WORKFLOW_COMPLETED":
            continue
        t, f, o, w = node_timings(rec, status, client.submitted_ms.get(x.id, 0.0))
        ttft += t
        to_first += f
        overhead += o
        tool_overhead += w
    out = {
        "jct_s": {trace_id(x.id): x.ended_at - x.submitted_at for x in agents
                  if x.ended_at is not None and x.submitted_at is not None},
        "states": {trace_id(x.id): x.state for x in agents},
        "decisions_by_kind": {k: int(v) for k, v in cluster.get("decisionsByKind", {}).items()},
        "bytes_moved_by_tier": {k: int(v) for k, v in cluster.get("bytesMovedByTier", {}).items()},
        "wall_s": time.monotonic() - t0,
        "ttft_s": sorted(ttft),
        "started_to_first_token_s": sorted(to_first),
        "call_overhead_s": sorted(overhead),
        "tool_overhead_s": sorted(tool_overhead),
    }
    with open(a.out, "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
    return 0 if all(s == "WORKFLOW_COMPLETED" for s in out["states"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
