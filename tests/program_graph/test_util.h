// Builders shared by the program_graph tests.
#pragma once

#include <string>
#include <vector>

#include "program_graph/workflow.h"

namespace switchyard::program_graph::testing {

inline v1::ProgramNode MakeNode(const std::string& id, v1::NodeKind kind,
                                const std::vector<std::string>& deps = {}) {
  v1::ProgramNode n;
  n.set_id(id);
  n.set_kind(kind);
  for (const std::string& d : deps) n.add_deps(d);
  return n;
}
inline v1::ProgramNode Llm(const std::string& id, const std::vector<std::string>& deps = {}) {
  return MakeNode(id, v1::LLM, deps);
}
inline v1::ProgramNode Tool(const std::string& id, const std::vector<std::string>& deps = {}) {
  return MakeNode(id, v1::TOOL, deps);
}
inline v1::ProgramNode WithRef(v1::ProgramNode n, const std::string& context,
                               v1::CacheRef::Mode mode) {
  v1::CacheRef* ref = n.add_cache_refs();
  ref->set_context(context);
  ref->set_mode(mode);
  return n;
}

inline v1::Workflow MakeWorkflow(const std::vector<v1::ProgramNode>& nodes,
                                 int64_t deadline_ms = 0) {
  v1::Workflow wf;
  wf.set_id("w");
  wf.set_tenant("acme");
  wf.set_deadline_ms(deadline_ms);
  for (const auto& n : nodes) *wf.add_nodes() = n;
  return wf;
}

// The error text of Create, or "OK".
inline std::string CreateError(const v1::Workflow& wf, Time now = Time{}, Limits limits = {}) {
  auto r = Workflow::Create(wf, now, limits);
  return r.ok() ? "OK" : r.status().message();
}

inline std::unique_ptr<Workflow> MustCreate(const std::vector<v1::ProgramNode>& nodes,
                                            int64_t deadline_ms = 0, Time now = Time{}) {
  auto r = Workflow::Create(MakeWorkflow(nodes, deadline_ms), now);
  if (!r.ok()) return nullptr;
  return std::move(r).value();
}

}  // namespace switchyard::program_graph::testing
