#!/usr/bin/env python3
"""Tests the Python client against a live `switchyard serve` that this test starts
(SWITCHYARD_BIN names the binary) on a free loopback port with a temporary data dir."""

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from switchyard_client import Client, SwitchyardError  # noqa: E402
from agent_loop import run_agent  # noqa: E402
import run_workload  # noqa: E402


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LiveServerTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        binary = os.environ.get("SWITCHYARD_BIN")
        if not binary or not os.path.exists(binary):
            raise unittest.SkipTest("SWITCHYARD_BIN does not name the switchyard binary")
        cls.dir = tempfile.mkdtemp(prefix="sy_pyclient_")
        cls.port = free_port()
        cls.log = open(os.path.join(cls.dir, "server.log"), "w")
        cls.proc = subprocess.Popen(
            [binary, "serve", "--listen", f"127.0.0.1:{cls.port}", "--data-dir", cls.dir],
            stdout=cls.log, stderr=subprocess.STDOUT)
        token_file = os.path.join(cls.dir, "tokens", "default")
        base = f"http://127.0.0.1:{cls.port}"
        deadline = time.time() + 15
        while time.time() < deadline:
            if os.path.exists(token_file) and Client(base, "").healthy():
                break
            time.sleep(0.05)
        else:
            cls.tearDownClass()
            raise RuntimeError("server did not start")
        with open(token_file) as f:
            cls.token = f.read().strip()
        cls.client = Client(base, cls.token)

    @classmethod
    def tearDownClass(cls):
        cls.proc.terminate()
        cls.proc.wait(timeout=10)
        cls.log.close()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_token_file_is_private(self):
        mode = os.stat(os.path.join(self.dir, "tokens", "default")).st_mode & 0o777
        self.assertEqual(mode, 0o600)

    def test_agent_loop_completes(self):
        wf, status = run_agent(self.client, steps=3, time_scale=0.001, log=lambda *_: None)
        self.assertEqual(status["state"], "WORKFLOW_COMPLETED")
        self.assertTrue(all(n["state"] == "NODE_SUCCEEDED" for n in status["nodes"]))
        self.assertIn(wf, [w["workflowId"] for w in self.client.list("COMPLETED")])

    def test_list_pages(self):
        for _ in range(3):
            run_agent(self.client, steps=1, time_scale=0.001, log=lambda *_: None)
        everything = [w["workflowId"] for w in self.client.list()]
        self.assertGreaterEqual(len(everything), 3)
        seen, token = [], None
        while True:
            page = self.client.list_page(page_size=2, page_token=token, order="desc")
            self.assertLessEqual(len(page.get("workflows", [])), 2)
            seen.extend(w["workflowId"] for w in page.get("workflows", []))
            token = page.get("nextPageToken")
            if not token:
                break
        self.assertEqual(seen, list(reversed(everything)))
        with self.assertRaises(SwitchyardError) as e:
            self.client.list_page(page_size=5000)
        self.assertEqual(e.exception.status, 400)
        self.assertIn("pageSize", e.exception.message)

    def test_errors_carry_code_and_field(self):
        with self.assertRaises(SwitchyardError) as e:
            self.client.submit_workflow({"nodes": [{"id": "a", "kind": "LLM", "bogus": 1}]})
        self.assertEqual(e.exception.status, 400)
        self.assertIn("bogus", e.exception.message)
        with self.assertRaises(SwitchyardError) as e:
            self.client.get("wf_does_not_exist")
        self.assertEqual(e.exception.status, 404)
        with self.assertRaises(SwitchyardError) as e:
            Client(self.client.base_url, "bad-token-0000000000").list()
        self.assertEqual(e.exception.status, 401)

    def test_agent_loop_shows_kv_and_decisions(self):
        wf, status = run_agent(self.client, steps=2, time_scale=0.001, log=lambda *_: None)
        # The scheduler runs on its own loop: its `complete` may follow the durable state.
        want = {"place", "admit", "complete"}
        deadline = time.time() + 10
        while True:
            kinds = {d["kind"] for d in status.get("decisions", [])}
            if want <= kinds or time.time() > deadline:
                break
            time.sleep(0.05)
            status = self.client.get(wf)
        self.assertTrue(want <= kinds, kinds)
        self.assertEqual([kv["context"] for kv in status.get("kv", [])], ["main"])

    def test_workload_driver_plays_a_trace(self):
        record = {
            "arrival_ms": 0,
            "workflow": {"id": "trace-wf", "tenant": "tenant-0", "deadline_ms": 5, "nodes": [
                {"id": "llm-0", "kind": "LLM", "model_id": "Llama-3.1-8B",
                 "cache_refs": [{"context": "main", "mode": "CREATE"}],
                 "hints": {"prompt_tokens": 3000, "extend_tokens": 3000, "max_output_tokens": 8}},
                {"id": "tool-0", "kind": "TOOL", "deps": ["llm-0"], "tool_name": "Bash"},
                {"id": "llm-1", "kind": "LLM", "deps": ["llm-0", "tool-0"],
                 "model_id": "Llama-3.1-8B", "cache_refs": [{"context": "main", "mode": "EXTEND"}],
                 "hints": {"prompt_tokens": 3100, "extend_tokens": 100, "max_output_tokens": 8}}]},
            "actuals": [{"node_id": "llm-0", "duration_ms": 900, "output_tokens": 8},
                        {"node_id": "tool-0", "duration_ms": 2000, "revealed_after": "llm-0"},
                        {"node_id": "llm-1", "duration_ms": 500, "output_tokens": 8,
                         "revealed_after": "llm-0"}]}
        out = open(os.devnull, "w")
        agents, cluster = run_workload.run(self.client, [record], scale=0.05, out=out, timeout=60)
        out.close()
        self.assertEqual(agents[0].state, "WORKFLOW_COMPLETED")
        self.assertGreaterEqual(int(cluster["decisionsByKind"]["place"]), 2)
        text = run_workload.summary(agents, cluster, 0.05)
        self.assertIn("JCT", text)
        self.assertIn("decisions by kind", text)

    def test_cancel_reason_round_trips(self):
        # The server percent-decodes query values: spaces, '&', '+', '/' and UTF-8 survive.
        wf = self.client.submit_workflow({"id": "py:cancel",
                                          "nodes": [{"id": "t", "kind": "TOOL"}]})
        self.assertEqual(wf, "py:cancel")
        reason = "tool timed out: caf\u00e9 & co + 1/2"
        self.client.cancel(wf, reason=reason)
        status = self.client.get(wf)
        self.assertEqual(status["state"], "WORKFLOW_CANCELLED")
        self.assertEqual(status["failureReason"], reason)

    def test_idempotent_submit(self):
        body = {"nodes": [{"id": "t", "kind": "TOOL"}]}
        a = self.client.submit_workflow(body, idempotency_key="py-key-1")
        b = self.client.submit_workflow(body, idempotency_key="py-key-1")
        self.assertEqual(a, b)


if __name__ == "__main__":
    unittest.main(verbosity=2)
