"""Switchyard HTTP/JSON client (Python standard library only).

    from switchyard_client import Client
    c = Client("http://127.0.0.1:8470", token)
    wf = c.submit_workflow({"nodes": [...]})
    c.report_event(wf, "plan", "LLM_STARTED")

Every POST carries an Idempotency-Key (generated unless given), so the client retries
429/503 answers and connection errors safely: the server applies a keyed request once and
returns its first answer to every repeat.
"""

import json
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid


class SwitchyardError(Exception):
    """An error answer: HTTP status, error code and message from the server."""

    def __init__(self, status, code, message, details=None):
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.details = details or {}


class Client:
    def __init__(self, base_url, token, timeout=10.0, max_retries=5):
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.max_retries = max_retries

    # ---- workflows ----
    def submit_workflow(self, workflow, idempotency_key=None):
        """Submits a workflow (a dict in switchyard.v1.Workflow JSON form); returns its id."""
        return self._call("POST", "/v1/workflows", workflow, idempotency_key)["workflowId"]

    def append_nodes(self, workflow_id, nodes, idempotency_key=None):
        return self._call("POST", f"/v1/workflows/{workflow_id}/nodes", {"nodes": nodes},
                          idempotency_key)

    def report_event(self, workflow_id, node_id, event_type, idempotency_key=None, **fields):
        body = {"nodeId": node_id, "type": event_type}
        body.update(fields)
        return self._call("POST", f"/v1/workflows/{workflow_id}/events", body, idempotency_key)

    def close(self, workflow_id, idempotency_key=None):
        return self._call("POST", f"/v1/workflows/{workflow_id}:close", {}, idempotency_key)

    def cancel(self, workflow_id, reason="", idempotency_key=None):
        path = f"/v1/workflows/{workflow_id}"
        if reason:
            path += "?reason=" + urllib.parse.quote(reason, safe="")  # the server decodes it
        return self._call("DELETE", path, None, idempotency_key)

    def get(self, workflow_id):
        return self._call("GET", f"/v1/workflows/{workflow_id}")

    def list_page(self, state=None, page_size=None, page_token=None, order=None):
        """One page of the caller's workflows (live and archived, by arrival):
        {"workflows": [...], "nextPageToken": "..." when more follow}."""
        query = {k: v for k, v in (("state", state), ("pageSize", page_size),
                                   ("pageToken", page_token), ("order", order)) if v}
        path = "/v1/workflows"
        if query:
            path += "?" + urllib.parse.urlencode(query)
        return self._call("GET", path)

    def list(self, state=None, order=None):
        """Every workflow of the caller (in `state` if given), following the pages."""
        out, token = [], None
        while True:
            page = self.list_page(state=state, page_size=1000, page_token=token, order=order)
            out.extend(page.get("workflows", []))
            token = page.get("nextPageToken")
            if not token:
                return out

    def cluster(self):
        return self._call("GET", "/v1/cluster")

    def wait_node(self, workflow_id, node_id, states=("NODE_SUCCEEDED",), timeout=120.0,
                  poll=0.02):
        """Polls GET until node `node_id` is in one of `states` (or the workflow ended);
        returns the workflow status. Raises SwitchyardError on timeout."""
        deadline = time.monotonic() + timeout
        while True:
            status = self.get(workflow_id)
            for n in status.get("nodes", []):
                if n["id"] == node_id and n.get("state") in states:
                    return status
            if status.get("state") in ("WORKFLOW_COMPLETED", "WORKFLOW_FAILED",
                                       "WORKFLOW_CANCELLED"):
                return status
            if time.monotonic() > deadline:
                raise SwitchyardError(0, "timeout", f"node {node_id} not in {states}")
            time.sleep(poll)

    def healthy(self):
        try:
            with urllib.request.urlopen(self.base_url + "/healthz", timeout=self.timeout) as r:
                return r.status == 200
        except (urllib.error.URLError, OSError):
            return False

    # ---- transport ----
    def _call(self, method, path, body=None, idempotency_key=None):
        headers = {"Authorization": f"Bearer {self.token}"}
        data = None
        if method in ("POST", "DELETE"):
            headers["Idempotency-Key"] = idempotency_key or str(uuid.uuid4())
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        for attempt in range(self.max_retries + 1):
            req = urllib.request.Request(self.base_url + path, data=data, method=method,
                                         headers=headers)
            try:
                with urllib.request.urlopen(req, timeout=self.timeout) as r:
                    text = r.read().decode()
                    return json.loads(text) if text else {}
            except urllib.error.HTTPError as e:
                text = e.read().decode()
                if e.code in (429, 503) and attempt < self.max_retries:
                    time.sleep(float(e.headers.get("Retry-After", "1")))
                    continue
                try:
                    err = json.loads(text)
                except ValueError:
                    err = {"code": "http", "message": text}
                raise SwitchyardError(e.code, err.get("code"), err.get("message"),
                                      err.get("details")) from None
            except (urllib.error.URLError, ConnectionError) as e:
                if attempt < self.max_retries:
                    time.sleep(min(2.0, 0.1 * 2 ** attempt))
                    continue
                raise SwitchyardError(0, "connection", str(e)) from None
        raise SwitchyardError(0, "retries", "out of retries")
