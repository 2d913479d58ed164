#!/usr/bin/env python3
"""An example agent loop against Switchyard.

The agent submits its first step (a planner LLM call), then loops: run the LLM call,
decide the next tools, run them, append the next LLM step that extends the same KV
context, and finally close the workflow. Tool waits are real sleeps, compressed by
--time-scale. LLM calls are reported as client-side results (LLM_STARTED/LLM_FINISHED):
the agent framework ran them on its own engine.

    python3 clients/python/agent_loop.py --url http://127.0.0.1:8470 --token TOKEN
"""

import argparse
import random
import sys
import time

from switchyard_client import Client

TOOLS = [("Read", 0.03), ("Grep", 0.04), ("Bash", 6.6), ("Edit", 0.05)]


def llm_node(node_id, deps, prompt, extend, output, create=False):
    return {"id": node_id, "kind": "LLM", "deps": deps, "modelId": "Llama-3.1-8B",
            "role": "agent",
            "cacheRefs": [{"context": "main", "mode": "CREATE" if create else "EXTEND"}],
            "hints": {"promptTokens": prompt, "extendTokens": extend,
                      "maxOutputTokens": output}}


def run_agent(client, steps=3, time_scale=0.01, seed=0, log=print, llm="service"):
    rng = random.Random(seed)
    llm_mode = llm
    prompt = 12000
    wf = client.submit_workflow({"nodes": [llm_node("llm-0", [], prompt, prompt, 120, True)],
                                 "labels": {"example": "agent_loop"}})
    log(f"submitted {wf}")
    for step in range(steps):
        llm = f"llm-{step}"
        if llm_mode == "client":
            client.report_event(wf, llm, "LLM_STARTED")
            client.report_event(wf, llm, "LLM_FINISHED", outputTokens=120)
        else:
            client.wait_node(wf, llm)
        tools = rng.sample(TOOLS, k=rng.randint(1, 2))
        nodes = [{"id": f"tool-{step}-{i}", "kind": "TOOL", "toolName": name, "deps": [llm],
                  "hints": {"expectedDurationMs": int(mean * 1000)}}
                 for i, (name, mean) in enumerate(tools)]
        client.append_nodes(wf, nodes)
        for n, (name, mean) in zip(nodes, tools):
            client.report_event(wf, n["id"], "TOOL_STARTED")
            time.sleep(rng.expovariate(1 / mean) * time_scale)
            client.report_event(wf, n["id"], "TOOL_FINISHED")
        if step + 1 < steps:
            prompt += 700
            client.append_nodes(wf, [llm_node(f"llm-{step + 1}", [n["id"] for n in nodes],
                                              prompt, 700, 120)])
        log(f"step {step}: ran {llm} and {len(nodes)} tool(s)")
    client.close(wf)
    status = client.get(wf)
    log(f"workflow {wf}: {status['state']}")
    return wf, status


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--url", default="http://127.0.0.1:8470")
    p.add_argument("--token", required=True)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--time-scale", type=float, default=0.01)
    p.add_argument("--llm", choices=["service", "client"], default="service",
                   help="who runs LLM nodes: the service (default) or this client")
    a = p.parse_args()
    _, status = run_agent(Client(a.url, a.token), a.steps, a.time_scale, llm=a.llm)
    return 0 if status["state"] == "WORKFLOW_COMPLETED" else 1


if __name__ == "__main__":
    sys.exit(main())
