// The scheduler driver on an injected loop (SchedulerDriver::Start's `loop`): a
// VirtualEventLoop the test runs, so a workflow with a ten-minute tool wait runs in virtual
// time — its LLM nodes on the simulated engine, its tool reported at a virtual instant —
// deterministically and without a thread of the driver's own.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "base/virtual_event_loop.h"
#include "driver/scheduler_driver.h"

namespace switchyard::driver {
namespace {

constexpr Duration kTool = Seconds(600.0);

v1::Workflow SessionWorkflow() {
  v1::Workflow w;
  w.set_id("wf-virtual");
  w.set_tenant("t");
  auto llm = [&](const std::string& id, v1::CacheRef::Mode mode, int64_t tokens) {
    v1::ProgramNode* n = w.add_nodes();
    n->set_id(id);
    n->set_kind(v1::LLM);
    auto* ref = n->add_cache_refs();
    ref->set_context("main");
    ref->set_mode(mode);
    if (mode == v1::CacheRef::CREATE) n->mutable_hints()->set_prompt_tokens(tokens);
    n->mutable_hints()->set_extend_tokens(tokens);
    n->mutable_hints()->set_max_output_tokens(32);
    return n;
  };
  llm("a", v1::CacheRef::CREATE, 4000);
  v1::ProgramNode* tool = w.add_nodes();
  tool->set_id("t");
  tool->set_kind(v1::TOOL);
  tool->set_tool_name("build");
  tool->add_deps("a");
  tool->mutable_hints()->set_expected_duration_ms(static_cast<int64_t>(ToSeconds(kTool) * 1000));
  llm("b", v1::CacheRef::EXTEND, 200)->add_deps("t");
  return w;
}

v1::NodeEvent ToolEvent(v1::NodeEventType type) {
  v1::NodeEvent e;
  e.set_node_id("t");
  e.set_type(type);
  return e;
}

TEST(DriverVirtualTime, AWorkflowWithATenMinuteToolRunsInVirtualTime) {
  const std::string dir = ::testing::TempDir() + "/sy_driver_virtual_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const Time start = Time::FromSeconds(1'000'000);
  VirtualEventLoop loop(start);
  std::vector<std::pair<std::string, Time>> ended;  // LLM nodes, when they ended
  SchedulerDriver::Callbacks cb;
  cb.llm_done = [&](const std::string&, const std::string& node, const Status& st, int64_t) {
    EXPECT_TRUE(st.ok()) << node << ": " << st;
    ended.push_back({node, loop.Now()});
  };
  SchedulerConfig config;
  config.workers = 1;
  auto started = SchedulerDriver::Start(config, dir, cb, &loop);
  ASSERT_TRUE(started.ok()) << started.status();
  std::unique_ptr<SchedulerDriver> driver = std::move(*started);
  // The KV decisions as proxy mode's steering sees them (Generation::WatchKv).
  std::vector<executors::Generation::KvDecision> watched;
  driver->WatchKv([&](const executors::Generation::KvDecision& d) { watched.push_back(d); });

  driver->Submit(SessionWorkflow());
  driver->Close("wf-virtual");
  // The first call runs; the client starts its tool as soon as it ended, and reports it
  // back ten minutes later (virtual time).
  Time tool_end = Time::Max();
  for (int i = 0; i < 1000 && ended.empty(); ++i) loop.RunUntil(loop.Now() + Seconds(1.0));
  ASSERT_EQ(ended.size(), 1u) << "node a did not end within 1000 virtual seconds";
  EXPECT_EQ(ended[0].first, "a");
  driver->Report("wf-virtual", ToolEvent(v1::TOOL_STARTED));
  tool_end = loop.Now() + kTool;
  loop.PostAt(tool_end, [&]() { driver->Report("wf-virtual", ToolEvent(v1::TOOL_FINISHED)); });
  loop.RunUntil(tool_end + Seconds(60.0));
  ASSERT_EQ(ended.size(), 2u) << "node b did not end within a minute of the tool";
  EXPECT_EQ(ended[1].first, "b");
  EXPECT_GE(ended[1].second, tool_end) << "b ran after its tool returned";
  EXPECT_GT(ended[0].second, start) << "a's prefill and decode took virtual time";

  // The decisions of the wait, in virtual time: the context was kept or moved during the
  // ten-minute tool, and was in HBM for b.
  v1::WorkflowStatus status;
  driver->Fill("wf-virtual", &status);
  std::vector<std::string> kinds;
  for (const v1::Decision& d : status.decisions()) kinds.push_back(d.kind());
  EXPECT_FALSE(kinds.empty());
  bool decided_wait = false;
  for (const std::string& k : kinds) decided_wait |= k == "keep" || k == "demote" || k == "discard";
  EXPECT_TRUE(decided_wait) << ::testing::PrintToString(kinds);

  // The watcher saw the same wait decisions, in order, each naming the workflow and its
  // context; a demotion carries the planned prefetch, which came before b ran.
  using Kind = executors::Generation::KvDecision::Kind;
  std::vector<std::string> waits;
  for (const std::string& k : kinds)
    if (k == "keep" || k == "demote" || k == "prefetch" || k == "discard") waits.push_back(k);
  std::vector<std::string> seen;
  for (const auto& d : watched) {
    const char* names[] = {"keep", "demote", "prefetch", "discard"};
    seen.push_back(names[static_cast<int>(d.kind)]);
    EXPECT_EQ(d.workflow, "wf-virtual");
    EXPECT_EQ(d.context, "wf-virtual/main");
    if (d.kind == Kind::kDemote) {
      EXPECT_EQ(d.worker, 0);
      EXPECT_GT(d.planned_prefetch_ms, ended[0].second.millis());
      EXPECT_LE(d.planned_prefetch_ms, tool_end.millis());
    }
    if (d.kind == Kind::kPrefetch) {
      EXPECT_EQ(d.worker, 0);
    }
  }
  EXPECT_EQ(seen, waits);
  driver.reset();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace switchyard::driver
