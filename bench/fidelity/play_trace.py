#!/usr/bin/env python3
"""Plays a Switchyard trace against a running server with the project's client and writes
what bench_fidelity compares as JSON.

The real half of `scripts/bench.sh fidelity`: clients/python/run_workload.py's Agent loop
(submit at the arrival time, append nodes as their predecessors succeed, real sleeps for
tool waits, close), with its time scale at 1 (the trace's times are already scaled by
`switchyard convert --time-scale`) and a 10 ms poll instead of the script's 50 ms, so that
the client's own reaction time stays small against the workflows' JCTs. Writes
{"jct_s": {workflow id without the client's suffix: seconds}, "states": {...},
 "decisions_by_kind": {...}, "bytes_moved_by_tier": {...}, "wall_s": ...}. Standard library
only.

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
    with open(os.devnull, "w") as quiet:
        agents, cluster = run_workload.run(Client(a.url, a.token), run_workload.load_trace(a.trace),
                                           1.0, "service", poll=a.poll, out=quiet,
                                           timeout=a.timeout)
    out = {
        "jct_s": {trace_id(x.id): x.ended_at - x.submitted_at for x in agents
                  if x.ended_at is not None and x.submitted_at is not None},
        "states": {trace_id(x.id): x.state for x in agents},
        "decisions_by_kind": {k: int(v) for k, v in cluster.get("decisionsByKind", {}).items()},
        "bytes_moved_by_tier": {k: int(v) for k, v in cluster.get("bytesMovedByTier", {}).items()},
        "wall_s": time.monotonic() - t0,
    }
    with open(a.out, "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
    return 0 if all(s == "WORKFLOW_COMPLETED" for s in out["states"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
