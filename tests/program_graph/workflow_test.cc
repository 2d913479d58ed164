// Construction, lookup, JSON input, and atomic dynamic growth.
#include "program_graph/workflow.h"

#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include "proto/json.h"
#include "tests/program_graph/test_util.h"

namespace switchyard::program_graph {
namespace {

using testing::Llm;
using testing::MakeWorkflow;
using testing::MustCreate;
using testing::Tool;
using testing::WithRef;

TEST(WorkflowTest, CreateIndexesNodesInInsertionOrder) {
  auto wf = MustCreate({Tool("b", {"a"}), Llm("a"), Llm("c", {"a", "b"})}, 9000);
  ASSERT_NE(wf, nullptr);
  EXPECT_EQ(wf->id(), "w");
  EXPECT_EQ(wf->tenant(), "acme");
  EXPECT_EQ(wf->deadline(), Time::FromMillis(9000));
  EXPECT_EQ(wf->size(), 3u);
  EXPECT_EQ(wf->Find("a"), 1u);
  EXPECT_EQ(wf->Find("zz"), std::nullopt);
  EXPECT_EQ(wf->deps(2), (std::vector<NodeIndex>{1, 0}));
  EXPECT_EQ(wf->children(1), (std::vector<NodeIndex>{0, 2}));
  EXPECT_EQ(wf->TopologicalOrder(), (std::vector<NodeIndex>{1, 0, 2}));
  EXPECT_EQ(wf->node(0).kind(), v1::TOOL);
}

TEST(WorkflowTest, FromJson) {
  const char* json = R"({"id":"wf1","tenant":"t","deadlineMs":"60000","nodes":[
      {"id":"plan","kind":"LLM","cacheRefs":[{"context":"main","mode":"CREATE"}],
       "hints":{"promptTokens":"1000","maxOutputTokens":"10"}},
      {"id":"search","kind":"TOOL","deps":["plan"],"toolName":"web",
       "hints":{"expectedDurationMs":"500"}},
      {"id":"answer","kind":"LLM","deps":["search"],
       "cacheRefs":[{"context":"main","mode":"EXTEND"}]}]})";
  v1::Workflow proto;
  ASSERT_TRUE(proto::ParseJson(json, &proto).ok());
  auto r = Workflow::Create(proto, Time::FromMillis(1000));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)->size(), 3u);
  EXPECT_EQ((*r)->ReadyNodes(), (std::vector<NodeIndex>{0}));
  v1::Workflow back = (*r)->ToProto();
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(back, proto));
}

TEST(WorkflowTest, AppendAddsNodesDependingOnOldAndNew) {
  auto wf = MustCreate({WithRef(Llm("a"), "main", v1::CacheRef::CREATE)});
  ASSERT_NE(wf, nullptr);
  // "c" is listed before its dep "b" within the batch.
  ASSERT_TRUE(
      wf->Append({WithRef(Llm("c", {"b"}), "main", v1::CacheRef::EXTEND), Tool("b", {"a"})}, Time{})
          .ok());
  EXPECT_EQ(wf->size(), 3u);
  EXPECT_EQ(wf->deps(1), (std::vector<NodeIndex>{2}));
  EXPECT_EQ(wf->children(0), (std::vector<NodeIndex>{2}));
  EXPECT_EQ(wf->TopologicalOrder(), (std::vector<NodeIndex>{0, 2, 1}));
  EXPECT_EQ(wf->NodesUsingContext("main"), (std::vector<NodeIndex>{0, 1}));
  EXPECT_EQ(wf->ToProto().nodes_size(), 3);
}

TEST(WorkflowTest, AppendToSucceededDepIsReadyAtOnce) {
  auto wf = MustCreate({Llm("a")});
  ASSERT_TRUE(wf->MarkRunning(0).ok());
  ASSERT_TRUE(wf->MarkSucceeded(0).ok());
  ASSERT_TRUE(wf->Append({Llm("b", {"a"}), Llm("c", {"b"})}, Time{}).ok());
  EXPECT_EQ(wf->state(1), v1::NODE_READY);
  EXPECT_EQ(wf->state(2), v1::NODE_PENDING);
}

// Snapshot of everything an append may touch.
struct Snapshot {
  std::string definition;
  std::vector<v1::NodeState> states;
  std::vector<NodeIndex> ready;
  std::vector<std::vector<NodeIndex>> children;
  std::vector<NodeIndex> main_users;
  Duration critical;
  std::vector<uint32_t> steps;
  static Snapshot Of(const Workflow& wf) {
    Snapshot s;
    s.definition = wf.ToProto().SerializeAsString();
    for (NodeIndex i = 0; i < wf.size(); ++i) {
      s.states.push_back(wf.state(i));
      s.children.push_back(wf.children(i));
      s.steps.push_back(wf.StepsToExecution(i));
    }
    s.ready = wf.ReadyNodes();
    s.main_users = wf.NodesUsingContext("main");
    s.critical = wf.CriticalPathLength();
    return s;
  }
  bool operator==(const Snapshot&) const = default;
};

TEST(WorkflowTest, FailedAppendChangesNothing) {
  auto a = WithRef(Llm("a"), "main", v1::CacheRef::CREATE);
  a.mutable_hints()->set_max_output_tokens(5);
  auto wf = MustCreate({a, Tool("t", {"a"}), Llm("u", {"t"})});
  ASSERT_NE(wf, nullptr);
  ASSERT_TRUE(wf->MarkRunning(0).ok());
  ASSERT_TRUE(wf->MarkSucceeded(0).ok());  // t is READY now
  Snapshot before = Snapshot::Of(*wf);

  auto ok_node = WithRef(Llm("x", {"t"}), "main", v1::CacheRef::EXTEND);
  ok_node.mutable_hints()->set_max_output_tokens(1000);
  const std::vector<std::vector<v1::ProgramNode>> bad_batches = {
      {ok_node, Llm("y", {"nope"})},                                      // unknown dep
      {ok_node, Llm("y", {"z"}), Llm("z", {"y"})},                        // cycle among new
      {ok_node, Llm("a")},                                                // duplicate of old
      {ok_node, WithRef(Llm("y"), "main", v1::CacheRef::READ)},           // not a descendant
      {ok_node, WithRef(Llm("y", {"x"}), "main", v1::CacheRef::CREATE)},  // second create
      {ok_node, WithRef(Llm("y"), "side", v1::CacheRef::CREATE),
       WithRef(Llm("q"), "side", v1::CacheRef::EXTEND)},  // new ctx, not ancestor
  };
  for (const auto& batch : bad_batches) {
    Status s = wf->Append(batch, Time{});
    EXPECT_TRUE(s.IsInvalidArgument()) << s;
    EXPECT_TRUE(before == Snapshot::Of(*wf)) << "after: " << s;
    EXPECT_EQ(wf->Find("x"), std::nullopt);
    EXPECT_TRUE(wf->NodesUsingContext("side").empty());
  }
  // The same good node still appends afterwards, and readiness continues.
  ASSERT_TRUE(wf->Append({ok_node}, Time{}).ok());
  EXPECT_EQ(wf->size(), 4u);
  EXPECT_EQ(wf->NodesUsingContext("main"), (std::vector<NodeIndex>{0, 3}));
  EXPECT_GT(wf->CriticalPathLength(), before.critical);
}

TEST(WorkflowTest, AppendCycleErrorNamesPath) {
  auto wf = MustCreate({Llm("a")});
  Status s = wf->Append({Llm("b", {"a", "c"}), Llm("c", {"b"})}, Time{});
  EXPECT_EQ(s.message(), "cycle: b -> c -> b");
}

TEST(WorkflowTest, AppendChecksDeadlineAgainstNow) {
  auto wf = MustCreate({Llm("a")}, 10'000);
  auto n = Llm("b");
  n.set_deadline_ms(3000);
  EXPECT_EQ(wf->Append({n}, Time::FromMillis(5000)).message(),
            "node 'b': deadline_ms: 3000 is in the past (now 5000 ms)");
  EXPECT_TRUE(wf->Append({n}, Time::FromMillis(2000)).ok());
}

TEST(WorkflowTest, AppendRespectsNodeLimitOverUnion) {
  Limits limits;
  limits.max_nodes = 3;
  auto r = Workflow::Create(MakeWorkflow({Llm("a"), Llm("b")}), Time{}, limits);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)->Append({Llm("c"), Llm("d")}, Time{}).message(),
            "workflow 'w': nodes: 4 nodes exceed the limit 3");
  EXPECT_EQ((*r)->size(), 2u);
  EXPECT_TRUE((*r)->Append({Llm("c")}, Time{}).ok());
}

TEST(WorkflowTest, AppendAfterCloseOrCancelIsRejected) {
  auto wf = MustCreate({Llm("a")});
  wf->Close();
  EXPECT_TRUE(wf->Append({Llm("b")}, Time{}).IsFailedPrecondition());
  auto wf2 = MustCreate({Llm("a")});
  wf2->Cancel("user");
  Status s = wf2->Append({Llm("b")}, Time{});
  EXPECT_EQ(s.message(), "workflow 'w': cannot append to a cancelled workflow");
}

TEST(WorkflowTest, GrowsToTheDefaultNodeLimitOneStepAtATime) {
  auto wf = MustCreate({WithRef(Llm("n0"), "main", v1::CacheRef::CREATE)});
  for (int k = 1; k < 10000; ++k) {
    auto n = k % 2 ? Tool("n" + std::to_string(k), {"n" + std::to_string(k - 1)})
                   : WithRef(Llm("n" + std::to_string(k), {"n" + std::to_string(k - 1)}), "main",
                             v1::CacheRef::EXTEND);
    ASSERT_TRUE(wf->Append({n}, Time{}).ok()) << k;
    NodeIndex prev = static_cast<NodeIndex>(k - 1);
    ASSERT_TRUE(wf->MarkRunning(prev).ok());
    ASSERT_EQ(*wf->MarkSucceeded(prev), (std::vector<NodeIndex>{prev + 1}));
  }
  EXPECT_EQ(wf->size(), 10000u);
  EXPECT_EQ(wf->NodesUsingContext("main").size(), 5000u);
  EXPECT_EQ(wf->Append({Llm("extra")}, Time{}).message(),
            "workflow 'w': nodes: 10001 nodes exceed the limit 10000");
}

TEST(WorkflowTest, EffectiveDeadline) {
  auto n = Llm("a");
  n.set_deadline_ms(500);
  auto wf = MustCreate({n, Llm("b")}, 800);
  EXPECT_EQ(wf->EffectiveDeadline(0), Time::FromMillis(500));
  EXPECT_EQ(wf->EffectiveDeadline(1), Time::FromMillis(800));
  auto wf2 = MustCreate({Llm("b")});
  EXPECT_EQ(wf2->EffectiveDeadline(0), std::nullopt);
}

}  // namespace
}  // namespace switchyard::program_graph
