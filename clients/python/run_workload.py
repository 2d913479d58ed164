#!/usr/bin/env python3
"""Drives a Switchyard workflow trace through the HTTP API, as agent frameworks would.

Reads a trace made by `switchyard convert` (JSON lines: {"arrival_ms", "workflow",
"actuals"}) and, for every workflow, plays the agent:
  - submits it at its arrival time (scaled by --time-scale) with only the nodes known at
    the start; a node with "revealed_after": X in the actuals is appended once X succeeded
    (the agent decides its next step after seeing the LLM's answer);
  - runs every TOOL node the moment it is ready: reports TOOL_STARTED, waits its recorded
    duration from the trace times --time-scale in real time, reports TOOL_FINISHED;
  - leaves LLM nodes to the service (its simulated engine runs them), or with
    --llm client reports them itself after their recorded duration;
  - closes the workflow when every node is revealed.
A live progress line shows workflows done, nodes, tools waiting and the scheduler's
decisions; the end prints a summary: JCT per workflow, decisions by kind, bytes moved per
tier (from GET /v1/cluster). Standard library only.

    python3 clients/python/run_workload.py --url http://127.0.0.1:8470 --token TOKEN \\
        --trace var/sample_trace.jsonl --time-scale 0.1
"""

import argparse
import json
import sys
import time
import uuid

from switchyard_client import Client

TERMINAL = ("WORKFLOW_COMPLETED", "WORKFLOW_FAILED", "WORKFLOW_CANCELLED")


def clean_workflow(workflow, suffix):
    """The trace's workflow, made submittable by a tenant: own id, no tenant, no times."""
    w = dict(workflow)
    w["id"] = f"{workflow['id']}-{suffix}"
    for key in ("tenant", "arrival_ms", "arrivalMs", "deadline_ms", "deadlineMs"):
        w.pop(key, None)
    return w


class Agent:
    """One workflow of the trace, played against the service."""

    def __init__(self, record, suffix, scale, llm_mode):
        self.workflow = clean_workflow(record["workflow"], suffix)
        self.id = self.workflow["id"]
        self.arrival = float(record.get("arrival_ms", 0)) / 1000.0 * scale
        self.scale = scale
        self.llm_mode = llm_mode
        actuals = {a["node_id"]: a for a in record.get("actuals", [])}
        self.duration = {k: float(a.get("duration_ms", 0)) / 1000.0 for k, a in actuals.items()}
        self.output_tokens = {k: int(a.get("output_tokens", 0)) for k, a in actuals.items()}
        self.reveal = {}  # node -> nodes appended after it succeeded
        nodes = self.workflow.pop("nodes", [])
        self.kind = {n["id"]: n["kind"] for n in nodes}
        initial = []
        for n in nodes:
            after = actuals.get(n["id"], {}).get("revealed_after")
            if after:
                self.reveal.setdefault(after, []).append(n)
            else:
                initial.append(n)
        self.workflow["nodes"] = initial
        self.unrevealed = len(nodes) - len(initial)
        self.total_nodes = len(nodes)
        self.submitted_at = None
        self.ended_at = None
        self.state = "PENDING"
        self.running = {}  # node -> time its recorded duration ends
        self.started = set()
        self.revealed = set()
        self.closed = False
        self.succeeded = 0

    def step(self, client, now):
        """Advances this agent; returns True while it has work left."""
        if self.submitted_at is None:
            if now < self.arrival:
                return True
            client.submit_workflow(self.workflow, idempotency_key=f"submit-{self.id}")
            self.submitted_at = now
        if self.ended_at is not None:
            return False
        for node, due in list(self.running.items()):
            if now >= due:
                kind = self.kind.get(node)
                if kind == "TOOL":
                    client.report_event(self.id, node, "TOOL_FINISHED",
                                        idempotency_key=f"{self.id}/{node}/finished")
                else:
                    client.report_event(self.id, node, "LLM_FINISHED",
                                        idempotency_key=f"{self.id}/{node}/finished",
                                        outputTokens=self.output_tokens.get(node, 0))
                del self.running[node]
        status = client.get(self.id)
        self.state = status["state"]
        self.decisions = status.get("decisions", [])
        if self.state in TERMINAL:
            self.ended_at = now
            return False
        self.succeeded = 0
        for n in status.get("nodes", []):
            node, state = n["id"], n.get("state")
            if state == "NODE_SUCCEEDED":
                self.succeeded += 1
                if node in self.reveal and node not in self.revealed:
                    self.revealed.add(node)
                    batch = self.reveal[node]
                    client.append_nodes(self.id, batch, idempotency_key=f"{self.id}/after/{node}")
                    self.unrevealed -= len(batch)
            elif state == "NODE_READY" and node not in self.started:
                is_tool = n.get("kind") == "TOOL"
                if is_tool or self.llm_mode == "client":
                    event = "TOOL_STARTED" if is_tool else "LLM_STARTED"
                    client.report_event(self.id, node, event,
                                        idempotency_key=f"{self.id}/{node}/started")
                    self.started.add(node)
                    self.running[node] = now + self.duration.get(node, 0.0) * self.scale
        if self.unrevealed == 0 and not self.closed:
            client.close(self.id, idempotency_key=f"{self.id}/close")
            self.closed = True
        return True


def fmt_bytes(n):
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.1f} {unit}"
        n /= 1024


def progress(agents, cluster, t0, now):
    done = sum(1 for a in agents if a.ended_at is not None)
    nodes = sum(a.succeeded if a.ended_at is None else a.total_nodes for a in agents)
    total = sum(a.total_nodes for a in agents)
    tools = sum(1 for a in agents for n in a.running if a.kind.get(n) == "TOOL")
    kinds = cluster.get("decisionsByKind", {})
    dec = " ".join(f"{k}={kinds[k]}" for k in ("place", "keep", "demote", "prefetch", "discard")
                   if k in kinds)
    return (f"[{now - t0:6.1f}s] workflows {done}/{len(agents)} done | nodes {nodes}/{total} "
            f"| tools waiting {tools} | {dec}")


def summary(agents, cluster, scale):
    lines = ["", "== summary"]
    jcts = []
    for a in agents:
        if a.ended_at is not None and a.submitted_at is not None:
            jct = a.ended_at - a.submitted_at
            jcts.append(jct)
            lines.append(f"  {a.id}: {a.state.replace('WORKFLOW_', '').lower()}, "
                         f"{a.total_nodes} nodes, JCT {jct:.1f} s")
        else:
            lines.append(f"  {a.id}: {a.state}")
    if jcts:
        jcts.sort()
        lines.append(f"  JCT mean {sum(jcts) / len(jcts):.1f} s, median "
                     f"{jcts[len(jcts) // 2]:.1f} s, max {jcts[-1]:.1f} s "
                     f"(tool waits x{scale} of the trace's real durations)")
    kinds = cluster.get("decisionsByKind", {})
    lines.append("  decisions by kind: " +
                 (", ".join(f"{k} {int(v)}" for k, v in sorted(kinds.items())) or "none"))
    moved = cluster.get("bytesMovedByTier", {})
    lines.append("  bytes moved, by destination tier: " +
                 (", ".join(f"{k} {fmt_bytes(v)}" for k, v in sorted(moved.items())) or "none"))
    real = cluster.get("realBytesMoved", {})
    if real:
        lines.append("  real KV bytes copied, by destination: " +
                     ", ".join(f"{k} {fmt_bytes(v)}" for k, v in sorted(real.items())))
    for e in cluster.get("workerEngines", []):
        lines.append(f"  worker {e.get('worker', 0)}: {e.get('engine', '')}, model "
                     f"{e.get('model', '')}, {int(e.get('kvBytesPerToken', 0))} B of KV per token"
                     + (f", KV pool {fmt_bytes(e.get('kvPoolUsedBytes', 0))} used of "
                        f"{fmt_bytes(e.get('kvPoolCapacityBytes', 0))}" if e.get('kvPool') else ""))
    for t in cluster.get("tiers", []):
        lines.append(f"  tier {t['tier']}@{t.get('worker', 0)}: "
                     f"{fmt_bytes(t.get('usedBytes', 0))} used of "
                     f"{fmt_bytes(t.get('capacityBytes', 0))} ({t.get('backing', '')})")
    return "\n".join(lines)


def run(client, records, scale=0.1, llm_mode="service", poll=0.05, out=sys.stdout,
        timeout=600.0):
    """Plays every record; returns (agents, cluster). Raises on a timeout."""
    suffix = uuid.uuid4().hex[:6]
    agents = [Agent(r, suffix, scale, llm_mode) for r in records]
    t0 = time.monotonic()
    cluster = {}
    last_print = 0.0
    tty = out.isatty()
    while True:
        now = time.monotonic() - t0
        busy = [a.step(client, now) for a in agents]
        if now - last_print > (0.5 if tty else 5.0) or not any(busy):
            cluster = client.cluster()
            line = progress(agents, cluster, 0.0, now)
            out.write(("\r" + line + "\x1b[K") if tty else line + "\n")
            out.flush()
            last_print = now
        if not any(busy):
            break
        if now > timeout:
            raise RuntimeError(f"workload not done after {timeout} s")
        time.sleep(poll)
    if tty:
        out.write("\n")
    return agents, client.cluster()


def load_trace(path, limit=0):
    records = []
    with open(path) as f:
        for line in f:
            if line.strip():
                records.append(json.loads(line))
    return records[:limit] if limit else records


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--url", default="http://127.0.0.1:8470")
    p.add_argument("--token", required=True)
    p.add_argument("--trace", required=True)
    p.add_argument("--time-scale", type=float, default=0.1,
                   help="factor on the trace's tool durations and arrival times (0.1: 10x faster)")
    p.add_argument("--llm", choices=["service", "client"], default="service")
    p.add_argument("--limit", type=int, default=0, help="first N workflows only")
    a = p.parse_args()
    client = Client(a.url, a.token)
    agents, cluster = run(client, load_trace(a.trace, a.limit), a.time_scale, a.llm)
    print(summary(agents, cluster, a.time_scale))
    return 0 if all(x.state == "WORKFLOW_COMPLETED" for x in agents) else 1


if __name__ == "__main__":
    sys.exit(main())
