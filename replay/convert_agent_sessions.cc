// agent-sessions → Switchyard trace (rules in convert.h).
#include <algorithm>
#include <cmath>
#include <random>
#include <set>

#include "proto/json.h"
#include "proto/switchyard/v1/trace_sources.pb.h"
#include "replay/convert.h"
#include "replay/convert_internal.h"

namespace switchyard::replay {
namespace {

using Session = v1::AgentSessionRecord;

// Tools whose effects outlive the call (writes, shell): side effects, no idempotency key.
bool HasSideEffect(const std::string& tool) {
  static const std::set<std::string> kEffects = {"Bash", "Edit", "Write", "MultiEdit",
                                                 "NotebookEdit"};
  return kEffects.count(tool) > 0;
}

// Index of the call that issued a tool: the last call requested at or before its start.
size_t OwnerCall(const Session& s, double start_s) {
  size_t owner = 0;
  for (int i = 0; i < s.llm_calls_size(); ++i) {
    if (s.llm_calls(i).req_s() <= start_s + 1e-9) owner = static_cast<size_t>(i);
  }
  return owner;
}

// The source has calls with no tokens at all (model "<synthetic>"): placeholders for an
// aborted request, not LLM work. They are dropped; the session's timing is unchanged.
void DropPlaceholderCalls(Session* s) {
  auto* calls = s->mutable_llm_calls();
  for (int i = calls->size() - 1; i >= 0; --i) {
    if (calls->Get(i).prompt_tokens() == 0 && calls->Get(i).output_tokens() == 0) {
      calls->DeleteSubrange(i, 1);
    }
  }
}

double SessionSpan(const Session& s) {
  double end = 0;
  for (const auto& c : s.llm_calls()) end = std::max(end, c.end_s());
  for (const auto& t : s.tool_calls()) end = std::max(end, t.start_s() + t.dur_s());
  return end;
}

Status CheckSession(const Session& s, size_t line_no) {
  std::string where = "agent-sessions line " + std::to_string(line_no);
  if (s.llm_calls_size() == 0) return Status::InvalidArgument(where + ": llm_calls is empty");
  for (int i = 0; i < s.llm_calls_size(); ++i) {
    const auto& c = s.llm_calls(i);
    std::string at = where + ": llm_calls[" + std::to_string(i) + "]";
    if (c.prompt_tokens() <= 0) return Status::InvalidArgument(at + ".prompt_tokens <= 0");
    if (c.output_tokens() < 0) return Status::InvalidArgument(at + ".output_tokens < 0");
    if (c.end_s() < c.req_s()) return Status::InvalidArgument(at + ".end_s < req_s");
    if (i > 0 && c.req_s() < s.llm_calls(i - 1).req_s()) {
      return Status::InvalidArgument(at + ".req_s goes backwards");
    }
  }
  for (int j = 0; j < s.tool_calls_size(); ++j) {
    if (s.tool_calls(j).dur_s() < 0) {
      return Status::InvalidArgument(where + ": tool_calls[" + std::to_string(j) + "].dur_s < 0");
    }
  }
  return Status::OK();
}

// Context bookkeeping: "main" for the agent, "subagent-<k>" for each run of subagent calls.
// A prompt holding the previous prompt and answer extends the context. One holding the
// previous prompt but fewer tokens than it and its answer (the harness re-sent the answer
// shortened, e.g. without its reasoning) continues the context from the previous prompt
// (keep_tokens: what an engine with prefix caching reuses) unless `prefix_reuse` is off;
// then, and for a prompt shorter than the previous one (context compaction), a new
// generation of the context starts.
struct ContextTracker {
  bool prefix_reuse = true;
  std::string current_main = "main";
  int main_gen = 0, sub_runs = 0;
  bool in_sub = false;
  std::string sub_name;
  int64_t main_tokens = -1, sub_tokens = -1;  // what the context holds after the last call
  int64_t main_prompt = -1, sub_prompt = -1;  // the last call's prompt

  struct Ref {
    std::string context;
    v1::CacheRef::Mode mode;
    int64_t extend = 0, keep = 0;
  };
  // The ref of call `c`; records what the context holds after it.
  Ref Next(const Session::LlmCall& c) {
    std::string* name = &current_main;
    int64_t* held = &main_tokens;
    int64_t* prompt = &main_prompt;
    if (c.subagent()) {
      if (!in_sub)
        sub_name = "subagent-" + std::to_string(sub_runs++), sub_tokens = sub_prompt = -1;
      in_sub = true;
      name = &sub_name;
      held = &sub_tokens;
      prompt = &sub_prompt;
    } else {
      in_sub = false;
    }
    Ref r{*name, v1::CacheRef::EXTEND, c.prompt_tokens() - *held, 0};
    if (*held >= 0 && r.extend < 0 && prefix_reuse && c.prompt_tokens() >= *prompt) {
      r.keep = *prompt;
      r.extend = c.prompt_tokens() - *prompt;
    } else if (*held < 0 || r.extend < 0) {
      r.mode = v1::CacheRef::CREATE;
      r.extend = c.prompt_tokens();
      if (*held >= 0 && !c.subagent()) r.context = *name = "main-" + std::to_string(++main_gen);
    }
    *held = c.prompt_tokens() + c.output_tokens();
    *prompt = c.prompt_tokens();
    return r;
  }
};

// The calls a user request precedes (ConvertOptions::think_time_s), with the human's think
// time before each, in ms; empty without think time.
std::map<int, int64_t> ThinkTimes(const Session& s, uint64_t session_seed,
                                  const ConvertOptions& o) {
  std::map<int, int64_t> out;
  if (!(o.think_time_s > 0)) return out;
  std::mt19937_64 rng(session_seed);
  std::bernoulli_distribution request(1.0 / std::max(1.0, o.think_every));
  std::lognormal_distribution<double> think(std::log(o.think_time_s), o.think_sigma);
  for (int i = 1; i < s.llm_calls_size(); ++i) {
    if (!request(rng)) continue;
    out[i] = SecondsToMs(std::min(think(rng), 86400.0));
  }
  return out;
}

// The human's think time before call i: after call i-1 and every tool it started.
void AddThinkNode(const Session& s, const std::vector<std::vector<int>>& tools_of, int i,
                  int64_t ms, v1::TraceRecord* rec) {
  v1::ProgramNode* n = rec->mutable_workflow()->add_nodes();
  n->set_id("think-" + std::to_string(i));
  n->set_kind(v1::TOOL);
  n->set_tool_name("human");
  n->add_deps("llm-" + std::to_string(i - 1));
  for (int j : tools_of[static_cast<size_t>(i - 1)]) n->add_deps("tool-" + std::to_string(j));
  auto* a = rec->add_actuals();
  a->set_node_id(n->id());
  a->set_duration_ms(ms);
  a->set_revealed_after("llm-" + std::to_string(i - 1));
}

v1::TraceRecord SessionToRecord(const Session& s, const std::string& wf_id, int64_t arrival_ms,
                                const std::string& tenant, const ConvertOptions& o,
                                const std::map<int, int64_t>& think_ms) {
  v1::TraceRecord rec;
  rec.set_source("agent-sessions:" + s.session());
  rec.set_arrival_ms(arrival_ms);
  v1::Workflow* wf = rec.mutable_workflow();
  wf->set_id(wf_id);
  wf->set_tenant(tenant);
  wf->set_arrival_ms(arrival_ms);
  std::vector<std::vector<int>> tools_of(s.llm_calls_size());
  for (int j = 0; j < s.tool_calls_size(); ++j) {
    tools_of[OwnerCall(s, s.tool_calls(j).start_s())].push_back(j);
  }
  ContextTracker ctx;
  ctx.prefix_reuse = o.prefix_reuse;
  for (int i = 0; i < s.llm_calls_size(); ++i) {
    const auto& c = s.llm_calls(i);
    v1::ProgramNode* n = wf->add_nodes();
    n->set_id("llm-" + std::to_string(i));
    n->set_kind(v1::LLM);
    n->set_role(c.subagent() ? "subagent" : "agent");
    n->set_model_id(o.model_id);
    const ContextTracker::Ref r = ctx.Next(c);
    auto* ref = n->add_cache_refs();
    ref->set_context(r.context);
    ref->set_mode(r.mode);
    if (r.keep > 0) ref->set_keep_tokens(r.keep);
    if (r.mode == v1::CacheRef::CREATE && o.shared_preamble_tokens > 0) {
      ref->set_shared_prefix("agent-preamble");
      ref->set_shared_prefix_tokens(std::min(o.shared_preamble_tokens, c.prompt_tokens()));
    }
    n->mutable_hints()->set_prompt_tokens(c.prompt_tokens());
    n->mutable_hints()->set_extend_tokens(r.extend);
    n->mutable_hints()->set_max_output_tokens(std::max<int64_t>(1, c.output_tokens()));
    if (i > 0) {
      n->add_deps("llm-" + std::to_string(i - 1));
      for (int j : tools_of[i - 1]) {
        const auto& t = s.tool_calls(j);
        if (t.start_s() + t.dur_s() <= c.req_s() + 1e-3) n->add_deps("tool-" + std::to_string(j));
      }
      if (think_ms.count(i)) n->add_deps("think-" + std::to_string(i));
    }
    auto* a = rec.add_actuals();
    a->set_node_id(n->id());
    a->set_duration_ms(SecondsToMs(c.end_s() - c.req_s()));
    a->set_output_tokens(c.output_tokens());
    if (i > 0) a->set_revealed_after("llm-" + std::to_string(i - 1));
  }
  for (int i = 0; i < s.llm_calls_size(); ++i) {
    for (int j : tools_of[i]) {
      const auto& t = s.tool_calls(j);
      v1::ProgramNode* n = wf->add_nodes();
      n->set_id("tool-" + std::to_string(j));
      n->set_kind(v1::TOOL);
      n->set_tool_name(t.tool());
      n->set_side_effect(HasSideEffect(t.tool()));
      n->add_deps("llm-" + std::to_string(i));
      auto* a = rec.add_actuals();
      a->set_node_id(n->id());
      a->set_duration_ms(SecondsToMs(t.dur_s()));
      a->set_revealed_after("llm-" + std::to_string(i));
    }
  }
  for (const auto& [i, ms] : think_ms) AddThinkNode(s, tools_of, i, ms, &rec);
  if (o.shared_preamble_tokens > 0)
    (*wf->mutable_labels())["shared_preamble"] = std::to_string(o.shared_preamble_tokens);
  return rec;
}

}  // namespace

Result<std::vector<v1::TraceRecord>> ConvertAgentSessions(const std::string& jsonl,
                                                          const ConvertOptions& o) {
  std::vector<std::pair<size_t, Session>> sessions;
  Status st = ForEachLine(jsonl, [&](size_t line_no, std::string_view line) -> Status {
    Session s;
    std::string where = "agent-sessions line " + std::to_string(line_no);
    proto::JsonParseOptions opts;
    opts.source = where;
    SY_RETURN_IF_ERROR(proto::ParseJson(line, &s, opts));
    DropPlaceholderCalls(&s);
    SY_RETURN_IF_ERROR(CheckSession(s, line_no));
    sessions.emplace_back(line_no, std::move(s));
    return Status::OK();
  });
  if (!st.ok()) return st;
  if (sessions.empty()) return Status::InvalidArgument("agent-sessions input has no sessions");
  size_t total = sessions.size() * static_cast<size_t>(std::max(1, o.repeat));
  if (o.limit > 0) total = std::min(total, static_cast<size_t>(o.limit));
  std::vector<int64_t> arrivals = SynthesiseArrivals(total, o);
  std::vector<v1::TraceRecord> out;
  out.reserve(total);
  for (size_t k = 0; k < total; ++k) {
    const Session& s = sessions[k % sessions.size()].second;
    std::string id = "as-" + s.session() + "-" + std::to_string(k / sessions.size());
    out.push_back(SessionToRecord(s, id, arrivals[k], TenantFor(k, o), o,
                                  ThinkTimes(s, o.seed * 1000003 + k, o)));
    ApplyScales(o, &out.back());
    SY_RETURN_IF_ERROR(ApplyDeadline(SessionSpan(s), o, &out.back()));
  }
  SortByArrival(&out);
  return out;
}

}  // namespace switchyard::replay
