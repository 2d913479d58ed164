// `switchyard graph FILE [--json]`: validates a workflow (JSON) or every workflow of a
// Switchyard trace (JSON lines) with program_graph, and prints its analysis: nodes,
// critical path, slack, steps-to-execution and KV contexts (a single workflow), or a
// summary (a trace). Exit code 1 when any workflow is invalid, with the error.
#include <algorithm>
#include <cstdio>
#include <string>

#include "base/clock.h"
#include "cli/command.h"
#include "program_graph/workflow.h"
#include "proto/json.h"
#include "replay/convert.h"

namespace {

using switchyard::Duration;
using switchyard::Time;
using switchyard::ToSeconds;
namespace pg = switchyard::program_graph;
namespace v1 = switchyard::v1;

const char* StateName(v1::NodeState s) {
  return v1::NodeState_Name(s).c_str() + 5;  // drop "NODE_"
}

void PrintWorkflow(const pg::Workflow& wf, Time now) {
  std::printf("workflow %s (tenant %s): %zu nodes, critical path %.3f s\n", wf.id().c_str(),
              wf.tenant().c_str(), wf.size(), ToSeconds(wf.CriticalPathLength()));
  std::printf("  %-12s %-5s %-10s %-8s %10s %10s %5s  %s\n", "node", "kind", "role", "state",
              "work_s", "remain_s", "steps", "contexts");
  for (pg::NodeIndex i = 0; i < wf.size(); ++i) {
    const auto& n = wf.node(i);
    std::string ctx;
    for (const auto& c : wf.ContextsOf(i)) ctx += (ctx.empty() ? "" : ",") + c;
    std::printf("  %-12s %-5s %-10s %-8s %10.3f %10.3f %5u  %s%s\n", n.id().c_str(),
                n.kind() == v1::LLM ? "llm" : "tool", n.role().c_str(), StateName(wf.state(i)),
                ToSeconds(wf.Work(i)), ToSeconds(wf.RemainingCriticalWork(i)),
                wf.StepsToExecution(i), ctx.c_str(),
                wf.retryable(i) ? "" : "  [not retryable: side effect, no idempotency key]");
  }
  std::string path;
  for (auto i : wf.CriticalPath()) path += (path.empty() ? "" : " -> ") + wf.node_id(i);
  std::printf("  critical path: %s\n", path.c_str());
  if (auto slack = wf.Slack(0, now)) std::printf("  slack at start: %.3f s\n", ToSeconds(*slack));
}

int GraphTrace(const std::string& text, const std::string& path) {
  auto recs = switchyard::replay::ParseTrace(text);
  if (!recs.ok()) return std::fprintf(stderr, "%s\n", recs.status().ToString().c_str()), 1;
  size_t bad = 0, nodes = 0;
  std::vector<double> critical;
  for (const auto& r : *recs) {
    auto wf = pg::Workflow::Create(r.workflow(), Time::FromMillis(r.arrival_ms()));
    if (!wf.ok()) {
      ++bad;
      std::fprintf(stderr, "%s: workflow %s: %s\n", path.c_str(), r.workflow().id().c_str(),
                   wf.status().ToString().c_str());
      continue;
    }
    nodes += (*wf)->size();
    critical.push_back(ToSeconds((*wf)->CriticalPathLength()));
  }
  std::sort(critical.begin(), critical.end());
  auto pct = [&](double q) {
    return critical.empty() ? 0.0 : critical[static_cast<size_t>(q * (critical.size() - 1))];
  };
  std::printf(
      "%s: %zu workflows, %zu valid, %zu nodes; critical path (default estimator) "
      "p50 %.1f s, p99 %.1f s\n",
      path.c_str(), recs->size(), recs->size() - bad, nodes, pct(0.5), pct(0.99));
  return bad == 0 ? 0 : 1;
}

int RunGraph(const std::vector<std::string>& args) {
  if (args.size() != 1 || args[0] == "--help" || args[0] == "-h") {
    const bool help = args.size() == 1;  // --help: the usage on stdout, success
    std::fprintf(help ? stdout : stderr, "usage: switchyard graph WORKFLOW.json | TRACE.jsonl\n");
    return help ? 0 : 2;
  }
  const std::string& path = args[0];
  auto text = switchyard::proto::ReadFile(path);
  if (!text.ok()) return std::fprintf(stderr, "%s\n", text.status().ToString().c_str()), 1;
  if (path.size() > 6 && path.substr(path.size() - 6) == ".jsonl") return GraphTrace(*text, path);
  v1::Workflow proto;
  switchyard::proto::JsonParseOptions opts;
  opts.source = path;
  auto st = switchyard::proto::ParseJson(*text, &proto, opts);
  if (!st.ok()) return std::fprintf(stderr, "%s\n", st.ToString().c_str()), 1;
  Time now = switchyard::RealClock::Default()->Now();
  auto wf = pg::Workflow::Create(proto, now);
  if (!wf.ok()) {
    std::fprintf(stderr, "%s: %s\n", path.c_str(), wf.status().ToString().c_str());
    return 1;
  }
  PrintWorkflow(**wf, now);
  return 0;
}

}  // namespace

SY_REGISTER_COMMAND(graph, "graph", "validate and analyse a workflow or a workflow trace",
                    RunGraph);
