// The embedding API end to end: an engine receives the scheduler's commands (queue and
// callback), runs the LLM nodes it is told to place and reports their results; the agent
// side reports its tool; the workflow completes and its status shows the decisions.
#include "api/embedded.h"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>

namespace switchyard::api {
namespace {

v1::ProgramNode Llm(const std::string& id, const std::vector<std::string>& deps,
                    v1::CacheRef::Mode mode) {
  v1::ProgramNode n;
  n.set_id(id);
  n.set_kind(v1::LLM);
  n.set_model_id("Llama-3.1-8B");
  for (const auto& d : deps) n.add_deps(d);
  auto* r = n.add_cache_refs();
  r->set_context("main");
  r->set_mode(mode);
  n.mutable_hints()->set_prompt_tokens(1000);
  n.mutable_hints()->set_extend_tokens(mode == v1::CacheRef::CREATE ? 1000 : 200);
  n.mutable_hints()->set_max_output_tokens(8);
  return n;
}

class EmbeddedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/sy_embedded_" + std::to_string(::getpid()) + "_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::unique_ptr<Embedded> Open() {
    EmbeddedOptions o;
    o.data_dir = dir_;
    o.durable = false;
    auto e = Embedded::Open(o);
    EXPECT_TRUE(e.ok()) << e.status();
    return e.ok() ? std::move(*e) : nullptr;
  }
  // Waits for the next command of `kind` for `node`, skipping others; fails after 10 s.
  static std::optional<EngineCommand> Expect(Embedded& e, const std::string& kind,
                                             const std::string& node) {
    for (int i = 0; i < 1000; ++i) {
      auto c = e.NextCommand(Millis(10));
      if (c && c->decision.kind() == kind && (node.empty() || c->decision.node_id() == node))
        return c;
    }
    ADD_FAILURE() << "no '" << kind << "' command for " << node;
    return std::nullopt;
  }
  std::string dir_;
};

TEST_F(EmbeddedTest, EngineReceivesCommandsAndReportsResults) {
  auto e = Open();
  ASSERT_TRUE(e);
  v1::Workflow w;
  w.set_id("emb");
  *w.add_nodes() = Llm("plan", {}, v1::CacheRef::CREATE);
  v1::ProgramNode tool;
  tool.set_id("grep");
  tool.set_kind(v1::TOOL);
  tool.add_deps("plan");
  tool.mutable_hints()->set_expected_duration_ms(50);
  *w.add_nodes() = tool;
  ASSERT_TRUE(e->Submit(w).ok());

  auto place = Expect(*e, "place", "plan");
  ASSERT_TRUE(place);
  EXPECT_EQ(place->workflow_id, "emb");
  EXPECT_EQ(place->decision.worker(), 0);
  ASSERT_TRUE(e->LlmStarted("emb", "plan").ok());
  ASSERT_TRUE(e->LlmFinished("emb", "plan", 8).ok());

  ASSERT_TRUE(Expect(*e, "admit", "grep"));
  v1::NodeEvent ev;
  ev.set_node_id("grep");
  ev.set_type(v1::TOOL_STARTED);
  ASSERT_TRUE(e->Report("emb", ev).ok());
  ev.set_type(v1::TOOL_FINISHED);
  ASSERT_TRUE(e->Report("emb", ev).ok());

  // The engine now takes commands through a callback.
  std::atomic<int> places{0}, completes{0};
  e->OnCommand([&](const EngineCommand& c) {
    if (c.decision.kind() == "place" && c.decision.node_id() == "answer") {
      ++places;
      EXPECT_TRUE(e->LlmFinished(c.workflow_id, "answer", 8).ok());  // reentrant report
    }
    if (c.decision.kind() == "complete") ++completes;
  });
  ASSERT_TRUE(e->Append("emb", {Llm("answer", {"grep"}, v1::CacheRef::EXTEND)}).ok());
  ASSERT_TRUE(e->Close("emb").ok());
  for (int i = 0; i < 1000 && completes == 0; ++i) std::this_thread::sleep_for(Millis(10));
  EXPECT_EQ(places.load(), 1);
  EXPECT_EQ(completes.load(), 1);
  auto st = e->Get("emb");
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->state(), v1::WORKFLOW_COMPLETED);
  EXPECT_GE(st->decisions_size(), 4);
  ASSERT_EQ(st->kv_size(), 1);
  EXPECT_EQ(st->kv(0).context(), "main");
  auto c = e->Cluster();
  EXPECT_EQ(c.model_executor(), "engine (reported LLM results)");
}

TEST_F(EmbeddedTest, ReportsBeforePlacementAreKeptAndRestartKeepsState) {
  {
    auto e = Open();
    ASSERT_TRUE(e);
    v1::Workflow w;
    w.set_id("early");
    *w.add_nodes() = Llm("plan", {}, v1::CacheRef::CREATE);
    ASSERT_TRUE(e->Submit(w).ok());
    // The engine reports at once, possibly before the scheduler placed the node.
    ASSERT_TRUE(e->LlmStarted("early", "plan").ok());
    ASSERT_TRUE(e->LlmFinished("early", "plan", 3).ok());
    ASSERT_TRUE(e->Close("early").ok());
    ASSERT_TRUE(Expect(*e, "complete", ""));
  }
  auto e = Open();  // restart on the same data dir
  ASSERT_TRUE(e);
  auto st = e->Get("early");
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_EQ(st->state(), v1::WORKFLOW_COMPLETED);
  EXPECT_EQ(e->Get("nope").status().code(), StatusCode::kNotFound);
}

// The command stream says how a workflow ended: "cancel" for a cancelled one, "fail" (naming
// the node) for one whose node failed for good, never "complete".
TEST_F(EmbeddedTest, CommandStreamEndsWithCancelOrFail) {
  auto e = Open();
  ASSERT_TRUE(e);
  v1::Workflow w;
  w.set_id("gone");
  *w.add_nodes() = Llm("plan", {}, v1::CacheRef::CREATE);
  ASSERT_TRUE(e->Submit(w).ok());
  ASSERT_TRUE(Expect(*e, "place", "plan"));
  ASSERT_TRUE(e->Cancel("gone", "user left").ok());
  auto cancel = Expect(*e, "cancel", "");
  ASSERT_TRUE(cancel);
  EXPECT_EQ(cancel->workflow_id, "gone");

  w.set_id("broken");
  ASSERT_TRUE(e->Submit(w).ok());
  ASSERT_TRUE(Expect(*e, "place", "plan"));
  ASSERT_TRUE(e->LlmFailed("broken", "plan", "bad request", /*retryable=*/false).ok());
  auto fail = Expect(*e, "fail", "plan");
  ASSERT_TRUE(fail);
  EXPECT_EQ(fail->workflow_id, "broken");
  EXPECT_NE(fail->decision.reason().find("bad request"), std::string::npos)
      << fail->decision.reason();
  EXPECT_EQ(e->Get("broken")->state(), v1::WORKFLOW_FAILED);
}

}  // namespace
}  // namespace switchyard::api
