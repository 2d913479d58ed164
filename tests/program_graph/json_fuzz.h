// The JSON-to-graph fuzz target body, shared by the bounded ctest run (json_fuzz_test.cc)
// and the optional libFuzzer binary (json_fuzzer_main.cc, target program_graph_fuzzer).
//
// Parses bytes as a v1::Workflow JSON document; when the graph is accepted, checks the
// invariants every accepted graph must satisfy, then drives it to completion. Returns the
// first violated invariant, or "" (also for inputs rejected as invalid).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <google/protobuf/util/message_differencer.h>

#include "program_graph/workflow.h"
#include "proto/json.h"

namespace switchyard::program_graph {

struct FuzzOutcome {
  bool parsed = false;    // the bytes were a valid Workflow JSON document
  bool accepted = false;  // Workflow::Create accepted it
  std::string violation;  // "" unless an invariant failed
};

namespace fuzz_detail {

inline std::string CheckStructure(const Workflow& wf, const v1::Workflow& input) {
  if (wf.size() != static_cast<size_t>(input.nodes_size())) return "size differs from input";
  if (!google::protobuf::util::MessageDifferencer::Equals(wf.ToProto(), input)) {
    return "ToProto differs";
  }
  std::vector<size_t> pos(wf.size(), SIZE_MAX);
  const auto& topo = wf.TopologicalOrder();
  if (topo.size() != wf.size()) return "topological order incomplete";
  for (size_t p = 0; p < topo.size(); ++p) pos[topo[p]] = p;
  const Limits& lim = wf.limits();
  for (NodeIndex i = 0; i < wf.size(); ++i) {
    const v1::ProgramNode& n = wf.node(i);
    if (n.id().empty() || wf.Find(n.id()) != i) return "id lookup broken at " + n.id();
    if (wf.deps(i).size() > lim.max_edges_per_node) return "edge limit ignored";
    if (n.hints().prompt_tokens() < 0 || n.hints().prompt_tokens() > lim.max_prompt_tokens)
      return "prompt hint out of range accepted";
    if (n.kind() != v1::LLM && n.kind() != v1::TOOL) return "kind unspecified accepted";
    for (NodeIndex d : wf.deps(i)) {
      if (pos[d] >= pos[i]) return "dep after dependent in topological order";
    }
    for (NodeIndex c : wf.children(i)) {
      if (wf.RemainingCriticalWork(i) < wf.RemainingCriticalWork(c)) return "critical work";
    }
    if (wf.RemainingCriticalWork(i) < wf.Work(i)) return "remaining < own work";
  }
  for (const std::string& c : wf.Contexts()) {
    const auto& users = wf.NodesUsingContext(c);
    const v1::ProgramNode& first = wf.node(users.front());
    bool creates = false;
    for (const auto& ref : first.cache_refs()) {
      creates |= ref.context() == c && ref.mode() == v1::CacheRef::CREATE;
    }
    if (!creates) return "context '" + c + "' first user is not its creator";
  }
  return "";
}

inline std::string RunToCompletion(Workflow* wf) {
  std::vector<char> done(wf->size(), 0);
  size_t count = 0;
  for (auto ready = wf->ReadyNodes(); !ready.empty(); ready = wf->ReadyNodes()) {
    for (NodeIndex i : ready) {
      for (NodeIndex d : wf->deps(i)) {
        if (!done[d]) return "node ready before its dependency";
      }
      if (!wf->MarkRunning(i).ok() || !wf->MarkSucceeded(i).ok()) return "transition refused";
      done[i] = 1;
      ++count;
    }
  }
  if (count != wf->size()) return "readiness did not cover every node";
  wf->Close();
  if (!wf->done()) return "workflow not done after all nodes succeeded";
  return "";
}

}  // namespace fuzz_detail

inline FuzzOutcome FuzzWorkflowJson(const uint8_t* data, size_t size) {
  FuzzOutcome out;
  v1::Workflow proto;
  std::string_view json(reinterpret_cast<const char*>(data), size);
  if (!proto::ParseJson(json, &proto).ok()) return out;
  out.parsed = true;
  auto wf = Workflow::Create(proto, Time::FromMillis(1000));
  if (!wf.ok()) {
    if (!wf.status().IsInvalidArgument()) out.violation = "non-InvalidArgument rejection";
    return out;
  }
  out.accepted = true;
  out.violation = fuzz_detail::CheckStructure(**wf, proto);
  if (!out.violation.empty()) return out;
  // Appending the same nodes again must fail (duplicate ids) and change nothing.
  if (proto.nodes_size() > 0) {
    std::vector<v1::ProgramNode> again(proto.nodes().begin(), proto.nodes().end());
    if ((*wf)->Append(again, Time::FromMillis(1000)).ok()) return {true, true, "re-append ok"};
    if ((*wf)->size() != static_cast<size_t>(proto.nodes_size())) return {true, true, "grew"};
  }
  out.violation = fuzz_detail::RunToCompletion(wf->get());
  return out;
}

}  // namespace switchyard::program_graph
