// Validation rules for workflow graphs: the per-field checks of one node or of the
// workflow header, and cycle reporting. Graph-wide rules (duplicate ids, unknown deps,
// cycles, context creation by an ancestor) are applied by Workflow (workflow.h) using
// these helpers.
//
// Every error is Status::InvalidArgument whose text names the node and the field, in the
// form "node 'ID': FIELD: PROBLEM" (README.md lists them all).
//
// Thread-safety: stateless functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "base/time.h"
#include "proto/switchyard/v1/workflow.pb.h"

namespace switchyard::program_graph {

// Limits on one workflow; hints above them are rejected as absurd.
struct Limits {
  size_t max_nodes = 10000;                   // nodes per workflow
  size_t max_edges_per_node = 256;            // deps per node
  int64_t max_prompt_tokens = 10'000'000;     // hints.prompt_tokens and extend_tokens
  int64_t max_output_tokens = 1'000'000;      // hints.max_output_tokens
  int64_t max_tool_duration_ms = 86'400'000;  // hints.expected_duration_ms (24 h)
};

// Deadlines beyond this (ms) cannot be represented in nanoseconds and are rejected.
inline constexpr int64_t kMaxDeadlineMs = INT64_MAX / 1'000'000;

// Identifiers (README.md "Identifiers"). Workflow, node and context ids and tenant names
// are 1 to kMaxIdBytes bytes of [A-Za-z0-9._:-] (what the service generates, "wf_" + hex,
// "llm-0", "main-2", fits). Tool names are labels shown to people, not keys: 1 to
// kMaxToolNameBytes bytes of text, spaces and non-ASCII UTF-8 allowed, control characters
// (U+0000-U+001F, U+007F-U+009F) not.
inline constexpr size_t kMaxIdBytes = 128;
inline constexpr size_t kMaxToolNameBytes = 256;

// Why `id` is not a valid identifier ("" when it is), e.g. "character 0x07 at offset 1 is
// not allowed (ids are 1-128 bytes of A-Z a-z 0-9 . _ : -)".
std::string IdProblem(std::string_view id);

// Why `name` is not a valid tool name ("" when it is).
std::string ToolNameProblem(std::string_view name);

// The workflow's own fields: id and tenant (identifiers when set; the service fills both),
// deadline not negative, representable, not before `now`.
Status ValidateWorkflowHeader(const v1::Workflow& wf, Time now);

// One node's own fields against the workflow header and limits: id (non-empty, an
// identifier), kind set, tenant, tool name, deadline (not negative, not after the
// workflow's, not before `now`), hints, timeout, retry policy, deps (identifiers, at most
// max_edges_per_node), cache ref fields (context an identifier, mode set, one ref per
// context). `position` names the node when its id is empty or not an identifier.
Status ValidateNodeFields(const v1::ProgramNode& node, size_t position, const v1::Workflow& wf,
                          const Limits& limits, Time now);

// Why a node is not safe to retry ("" when it is): a TOOL with side_effect and no
// idempotency_key.
std::string RetryBlockReason(const v1::ProgramNode& node);

// "cycle: a -> b -> c -> a" for a cycle given as node ids where each node depends on the
// next one (a depends on b, b on c, c on a); the first id is not repeated in the input.
std::string CycleText(const std::vector<std::string>& ids);

}  // namespace switchyard::program_graph
