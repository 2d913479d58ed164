// The OpenAPI 3 document served at /openapi.json. Every POST has a request example that
// the service accepts (tests/serve/openapi_test.cc posts each of them).
#include "serve/http_api.h"

namespace switchyard::serve {

const std::string& OpenApiDocument() {
  static const std::string kDoc = R"JSON({
  "openapi": "3.0.3",
  "info": {"title": "Switchyard", "version": "0.1.0",
           "description": "Scheduler for agentic LLM workflows with network-aware KV-cache tiering. Errors are {code, message, details}."},
  "components": {
    "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
    "schemas": {
      "Error": {"type": "object", "properties": {"code": {"type": "string"}, "message": {"type": "string"}, "details": {"type": "object"}}},
      "Workflow": {"type": "object", "description": "switchyard.v1.Workflow (proto3 JSON)"},
      "NodeEvent": {"type": "object", "description": "switchyard.v1.NodeEvent (proto3 JSON)"},
      "AppendNodesRequest": {"type": "object", "description": "switchyard.v1.AppendNodesRequest"},
      "WorkflowStatus": {"type": "object", "description": "switchyard.v1.WorkflowStatus: state per node, kv (where each context's KV lives: tier, worker, bytes, inFlight) and decisions (the scheduler's commands with times)",
                         "properties": {"workflowId": {"type": "string"}, "state": {"type": "string"},
                                        "nodes": {"type": "array", "items": {"type": "object"}},
                                        "kv": {"type": "array", "items": {"$ref": "#/components/schemas/KvPlacement"}},
                                        "decisions": {"type": "array", "items": {"$ref": "#/components/schemas/Decision"}}}},
      "KvPlacement": {"type": "object", "description": "switchyard.v1.KvPlacement",
                      "properties": {"context": {"type": "string"}, "tier": {"type": "string", "enum": ["hbm", "host", "disk", "peer", "none"]},
                                     "worker": {"type": "integer"}, "bytes": {"type": "string", "format": "uint64"},
                                     "tokens": {"type": "string", "format": "int64"}, "inFlight": {"type": "boolean"}, "inFlightTo": {"type": "string"}}},
      "Decision": {"type": "object", "description": "switchyard.v1.Decision: one scheduler command",
                   "properties": {"timeMs": {"type": "string", "format": "int64"},
                                  "kind": {"type": "string", "enum": ["admit", "place", "preempt", "keep", "demote", "prefetch", "discard", "retry", "fail", "cancel", "complete"]},
                                  "nodeId": {"type": "string"}, "context": {"type": "string"}, "src": {"type": "string"}, "dst": {"type": "string"},
                                  "bytes": {"type": "string", "format": "uint64"}, "trafficClass": {"type": "string"}, "worker": {"type": "integer"},
                                  "reason": {"type": "string"}, "line": {"type": "string"}}},
      "WorkflowTimeline": {"type": "object", "description": "switchyard.v1.WorkflowTimeline: node events with times (submitted, ready, admitted, placed, started, first_token, finished, failed, preempted, retry, tool_started, tool_finished, tool_failed) and the transfers the decisions caused, each with its four events in order (transport_completed, validated, committed, consumed) or the failed/cancelled event that ended it; times in microseconds since the Unix epoch",
                           "properties": {"workflowId": {"type": "string"},
                                          "nodeEvents": {"type": "array", "items": {"type": "object", "properties": {
                                            "timeUs": {"type": "string", "format": "int64"}, "nodeId": {"type": "string"}, "event": {"type": "string"},
                                            "worker": {"type": "integer"}, "detail": {"type": "string"}}}},
                                          "transfers": {"type": "array", "items": {"type": "object", "properties": {
                                            "transferId": {"type": "string", "format": "uint64", "description": "the decision's transferId"},
                                            "kind": {"type": "string", "enum": ["demote", "prefetch"]}, "nodeId": {"type": "string"}, "context": {"type": "string"},
                                            "decidedUs": {"type": "string", "format": "int64"}, "trafficClass": {"type": "string"},
                                            "links": {"type": "array", "items": {"type": "string"}}, "bytes": {"type": "string", "format": "uint64"},
                                            "srcTier": {"type": "string"}, "srcWorker": {"type": "integer"}, "dstTier": {"type": "string"}, "dstWorker": {"type": "integer"},
                                            "events": {"type": "array", "items": {"type": "object", "properties": {
                                              "event": {"type": "string", "enum": ["transport_completed", "validated", "committed", "consumed", "failed", "cancelled"]},
                                              "timeUs": {"type": "string", "format": "int64"}, "detail": {"type": "string"}}}},
                                            "outcome": {"type": "string", "enum": ["in_flight", "committed", "consumed", "failed", "cancelled"]},
                                            "blocks": {"type": "integer"}, "movedBytes": {"type": "string", "format": "uint64"}}}},
                                          "nodeEventsDropped": {"type": "string", "format": "uint64"}, "transfersDropped": {"type": "string", "format": "uint64"},
                                          "archived": {"type": "boolean"}}},
      "ClusterState": {"type": "object", "description": "switchyard.v1.ClusterState: workflow counts, workers, model executor, kv mover, tiers with occupancy (tiers), links with budgets by traffic class (links), decisionsByKind, bytesMovedByTier; tenants with the admin token",
                       "properties": {"workflows": {"type": "object"}, "tiers": {"type": "array", "items": {"type": "object"}},
                                      "links": {"type": "array", "items": {"type": "object"}}, "decisionsByKind": {"type": "object"},
                                      "bytesMovedByTier": {"type": "object"}, "tenants": {"type": "array", "items": {"type": "object"}}}}
    },
    "parameters": {
      "id": {"name": "id", "in": "path", "required": true, "schema": {"type": "string"}},
      "idem": {"name": "Idempotency-Key", "in": "header", "required": false, "schema": {"type": "string"},
               "description": "A repeated request with the same key returns the first answer and does nothing twice."}
    },
    "responses": {
      "Error": {"description": "400 bad field, 401, 403, 404, 409, 413 body limit, 429 rate limit (Retry-After), 503 overload (Retry-After)",
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
    }
  },
  "security": [{"bearer": []}],
  "paths": {
    "/healthz": {"get": {"summary": "liveness", "security": [], "responses": {"200": {"description": "ok"}}}},
    "/metrics": {"get": {"summary": "Prometheus metrics", "security": [], "responses": {"200": {"description": "text exposition format"}}}},
    "/openapi.json": {"get": {"summary": "this document", "security": [], "responses": {"200": {"description": "OpenAPI 3"}}}},
    "/v1/cluster": {"get": {"summary": "topology, tiers with occupancy, link budgets by class, decisions by kind, bytes moved per tier; tenants and weights with the admin token",
                            "responses": {"200": {"description": "ClusterState", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ClusterState"}}}},
                                          "default": {"$ref": "#/components/responses/Error"}}}},
    "/v1/models/{model}:bump-epoch": {"post": {"summary": "admin token: a model-epoch change (new weights under the same id); every tier's blocks of the old epoch become unreadable and its contexts recompute on their next call",
                                               "parameters": [{"name": "model", "in": "path", "required": true, "schema": {"type": "string"}, "description": "a served model id or alias"}],
                                               "responses": {"200": {"description": "{model, modelEpoch}: the served id and its new epoch"},
                                                             "default": {"$ref": "#/components/responses/Error"}}}},
    "/v1/workers/{worker}:drain": {"post": {"summary": "admin token: takes a worker out of service: nothing new is placed on it, its idle contexts move off (another tier, a peer, or dropped for recompute), running calls finish there; /v1/cluster then lists it draining, and drained once empty. Not durable: a restarted server starts with every worker in service",
                                            "parameters": [{"name": "worker", "in": "path", "required": true, "schema": {"type": "integer"}, "description": "the scheduler's worker number"}],
                                            "responses": {"200": {"description": "{worker, state, drained}"},
                                                          "default": {"$ref": "#/components/responses/Error"}}}},
    "/v1/workers/{worker}:undrain": {"post": {"summary": "admin token: puts a draining worker back in service",
                                              "parameters": [{"name": "worker", "in": "path", "required": true, "schema": {"type": "integer"}, "description": "the scheduler's worker number"}],
                                              "responses": {"200": {"description": "{worker, state, drained}"},
                                                            "default": {"$ref": "#/components/responses/Error"}}}},
    "/v1/chat/completions": {"post": {"summary": "OpenAI-compatible chat completion (README.md 'OpenAI-compatible front'): a session (x-session-id) is a workflow, each request an LLM node; stream: true answers with Server-Sent Events",
                                      "responses": {"200": {"description": "an OpenAI chat.completion, or text/event-stream chunks"},
                                                    "default": {"description": "an OpenAI error: {error: {message, type, param, code}}"}}}},
    "/v1/completions": {"post": {"summary": "OpenAI-compatible (legacy) text completion",
                                 "responses": {"200": {"description": "an OpenAI text_completion, or text/event-stream chunks"},
                                               "default": {"description": "an OpenAI error"}}}},
    "/v1/models": {"get": {"summary": "the models the OpenAI-compatible front serves (the upstreams' in proxy mode)",
                           "responses": {"200": {"description": "{object: list, data: [{id, object: model, created, owned_by}]}"}}}},
    "/v1/sessions/{id}": {"delete": {"summary": "ends an OpenAI-front session: its waits end, its workflow closes, its KV is freed",
                                     "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}],
                                     "responses": {"200": {"description": "{id, object: session.deleted, deleted: true}"},
                                                   "default": {"description": "an OpenAI error (404 session_not_found)"}}}},
    "/v1/workflows": {
      "get": {"summary": "list the caller's workflows, live and archived (archived ones as summaries with archived: true), one page at a time, ordered by arrival",
              "parameters": [{"name": "state", "in": "query", "schema": {"type": "string", "enum": ["RUNNING", "COMPLETED", "FAILED", "CANCELLED"]}},
                             {"name": "pageSize", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 100}},
                             {"name": "pageToken", "in": "query", "description": "nextPageToken of the previous page", "schema": {"type": "string"}},
                             {"name": "order", "in": "query", "schema": {"type": "string", "enum": ["asc", "desc"], "default": "asc"}}],
              "responses": {"200": {"description": "WorkflowList",
                                    "content": {"application/json": {"schema": {"type": "object", "properties": {
                                      "workflows": {"type": "array", "items": {"$ref": "#/components/schemas/WorkflowStatus"}},
                                      "nextPageToken": {"type": "string", "description": "set when more workflows follow"}}}}}},
                            "default": {"$ref": "#/components/responses/Error"}}},
      "post": {"summary": "submit a workflow", "parameters": [{"$ref": "#/components/parameters/idem"}],
               "requestBody": {"required": true, "content": {"application/json": {
                 "schema": {"$ref": "#/components/schemas/Workflow"},
                 "example": {"nodes": [
                   {"id": "plan", "kind": "LLM", "role": "planner", "modelId": "Llama-3.1-8B",
                    "cacheRefs": [{"context": "main", "mode": "CREATE"}],
                    "hints": {"promptTokens": 12000, "extendTokens": 12000, "maxOutputTokens": 300}},
                   {"id": "search", "kind": "TOOL", "toolName": "Grep", "deps": ["plan"], "hints": {"expectedDurationMs": 40}}]}}}},
               "responses": {"201": {"description": "{\"workflowId\": ...}"}, "default": {"$ref": "#/components/responses/Error"}}}
    },
    "/v1/workflows/{id}": {
      "parameters": [{"$ref": "#/components/parameters/id"}],
      "get": {"summary": "state per node, where each context's KV lives, and the decisions taken",
              "responses": {"200": {"description": "WorkflowStatus", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/WorkflowStatus"}}}},
                            "default": {"$ref": "#/components/responses/Error"}}},
      "delete": {"summary": "cancel", "parameters": [{"$ref": "#/components/parameters/idem"}, {"name": "reason", "in": "query", "schema": {"type": "string"}}],
                 "responses": {"200": {"description": "accepted"}, "default": {"$ref": "#/components/responses/Error"}}}
    },
    "/v1/workflows/{id}/timeline": {
      "parameters": [{"$ref": "#/components/parameters/id"}],
      "get": {"summary": "the workflow's node events over time and the KV transfers its decisions caused, with their four events (kept while the workflow is in memory; archived: empty with archived: true)",
              "responses": {"200": {"description": "WorkflowTimeline", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/WorkflowTimeline"}}}},
                            "default": {"$ref": "#/components/responses/Error"}}}
    },
    "/v1/workflows/{id}/nodes": {
      "parameters": [{"$ref": "#/components/parameters/id"}],
      "post": {"summary": "append nodes (atomic)", "parameters": [{"$ref": "#/components/parameters/idem"}],
               "requestBody": {"required": true, "content": {"application/json": {
                 "schema": {"$ref": "#/components/schemas/AppendNodesRequest"},
                 "example": {"nodes": [{"id": "answer", "kind": "LLM", "deps": ["search"], "modelId": "Llama-3.1-8B",
                                        "cacheRefs": [{"context": "main", "mode": "EXTEND"}],
                                        "hints": {"promptTokens": 12800, "extendTokens": 500, "maxOutputTokens": 200}}]}}}},
               "responses": {"200": {"description": "accepted"}, "default": {"$ref": "#/components/responses/Error"}}}
    },
    "/v1/workflows/{id}/events": {
      "parameters": [{"$ref": "#/components/parameters/id"}],
      "post": {"summary": "report a node event: tool started/finished/failed (the scheduler waits for these), or client-side LLM results when the server runs with llm_executor 'reported' (409 while its simulated engine runs LLM nodes)",
               "parameters": [{"$ref": "#/components/parameters/idem"}],
               "requestBody": {"required": true, "content": {"application/json": {
                 "schema": {"$ref": "#/components/schemas/NodeEvent"},
                 "example": {"nodeId": "plan", "type": "LLM_STARTED"}}}},
               "responses": {"200": {"description": "accepted"}, "default": {"$ref": "#/components/responses/Error"}}}
    },
    "/v1/workflows/{id}:close": {
      "parameters": [{"$ref": "#/components/parameters/id"}],
      "post": {"summary": "no more nodes will be appended", "parameters": [{"$ref": "#/components/parameters/idem"}],
               "requestBody": {"required": false, "content": {"application/json": {"example": {}}}},
               "responses": {"200": {"description": "accepted"}, "default": {"$ref": "#/components/responses/Error"}}}
    }
  }
})JSON";
  return kDoc;
}

}  // namespace switchyard::serve
