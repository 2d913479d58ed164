// One test per validation rule, each asserting the exact error text.
#include "program_graph/validation.h"

#include <gtest/gtest.h>

#include "tests/program_graph/test_util.h"

namespace switchyard::program_graph {
namespace {

using testing::CreateError;
using testing::Llm;
using testing::MakeWorkflow;
using testing::Tool;
using testing::WithRef;

TEST(ValidationTest, AcceptsSimpleGraph) {
  EXPECT_EQ(CreateError(MakeWorkflow({Llm("a"), Tool("b", {"a"}), Llm("c", {"a", "b"})})), "OK");
}

TEST(ValidationTest, EmptyNodeId) {
  EXPECT_EQ(CreateError(MakeWorkflow({Llm("a"), Llm("")})), "node #1: id: empty node id");
}

TEST(ValidationTest, DuplicateNodeId) {
  EXPECT_EQ(CreateError(MakeWorkflow({Llm("a"), Llm("b"), Tool("a")})),
            "node 'a': id: duplicate node id");
}

TEST(ValidationTest, UnknownDependency) {
  EXPECT_EQ(CreateError(MakeWorkflow({Llm("a"), Llm("b", {"a", "x"})})),
            "node 'b': deps: unknown dependency 'x'");
}

TEST(ValidationTest, SelfDependency) {
  EXPECT_EQ(CreateError(MakeWorkflow({Llm("a", {"a"})})), "node 'a': deps: depends on itself");
}

TEST(ValidationTest, DuplicateDependency) {
  EXPECT_EQ(CreateError(MakeWorkflow({Llm("a"), Llm("b", {"a", "a"})})),
            "node 'b': deps: duplicate dependency 'a'");
}

TEST(ValidationTest, CycleReportsPath) {
  // a depends on b, b on c, c on a; d hangs off the cycle and is not part of the report.
  EXPECT_EQ(CreateError(
                MakeWorkflow({Llm("d", {"a"}), Llm("a", {"b"}), Llm("b", {"c"}), Llm("c", {"a"})})),
            "cycle: a -> b -> c -> a");
  EXPECT_EQ(CreateError(MakeWorkflow({Llm("x", {"y"}), Llm("y", {"x"})})), "cycle: x -> y -> x");
}

TEST(ValidationTest, NodeDeadlineAfterWorkflowDeadline) {
  auto n = Llm("a");
  n.set_deadline_ms(5000);
  EXPECT_EQ(CreateError(MakeWorkflow({n}, 4000)),
            "node 'a': deadline_ms: 5000 is after the workflow deadline 4000");
  EXPECT_EQ(CreateError(MakeWorkflow({n}, 5000)), "OK");
}

TEST(ValidationTest, NodeDeadlineInThePast) {
  auto n = Llm("a");
  n.set_deadline_ms(1000);
  EXPECT_EQ(CreateError(MakeWorkflow({n}), Time::FromMillis(2000)),
            "node 'a': deadline_ms: 1000 is in the past (now 2000 ms)");
}

TEST(ValidationTest, WorkflowDeadlineInThePast) {
  EXPECT_EQ(CreateError(MakeWorkflow({Llm("a")}, 1000), Time::FromMillis(2000)),
            "workflow 'w': deadline_ms: 1000 is in the past (now 2000 ms)");
}

TEST(ValidationTest, NegativeAndOutOfRangeDeadlines) {
  auto n = Llm("a");
  n.set_deadline_ms(-5);
  EXPECT_EQ(CreateError(MakeWorkflow({n})), "node 'a': deadline_ms: -5 is negative");
  n.set_deadline_ms(INT64_MAX);
  EXPECT_EQ(CreateError(MakeWorkflow({n})),
            "node 'a': deadline_ms: 9223372036854775807 is out of range");
}

TEST(ValidationTest, NegativeHints) {
  auto n = Llm("a");
  n.mutable_hints()->set_prompt_tokens(-1);
  EXPECT_EQ(CreateError(MakeWorkflow({n})), "node 'a': hints.prompt_tokens: -1 is negative");
  auto t = Tool("t");
  t.mutable_hints()->set_expected_duration_ms(-7);
  EXPECT_EQ(CreateError(MakeWorkflow({t})), "node 't': hints.expected_duration_ms: -7 is negative");
}

TEST(ValidationTest, AbsurdHintsAgainstDefaultLimits) {
  auto n = Llm("a");
  n.mutable_hints()->set_prompt_tokens(10'000'001);
  EXPECT_EQ(CreateError(MakeWorkflow({n})),
            "node 'a': hints.prompt_tokens: 10000001 exceeds the limit 10000000");
  n = Llm("a");
  n.mutable_hints()->set_max_output_tokens(1'000'001);
  EXPECT_EQ(CreateError(MakeWorkflow({n})),
            "node 'a': hints.max_output_tokens: 1000001 exceeds the limit 1000000");
  auto t = Tool("t");
  t.mutable_hints()->set_expected_duration_ms(86'400'001);
  EXPECT_EQ(CreateError(MakeWorkflow({t})),
            "node 't': hints.expected_duration_ms: 86400001 exceeds the limit 86400000");
}

TEST(ValidationTest, HintLimitsAreConfigurable) {
  Limits limits;
  limits.max_prompt_tokens = 100;
  auto n = Llm("a");
  n.mutable_hints()->set_extend_tokens(101);
  EXPECT_EQ(CreateError(MakeWorkflow({n}), Time{}, limits),
            "node 'a': hints.extend_tokens: 101 exceeds the limit 100");
}

TEST(ValidationTest, TenantMismatch) {
  auto n = Llm("a");
  n.set_tenant("acme");
  EXPECT_EQ(CreateError(MakeWorkflow({n})), "OK");
  n.set_tenant("evil");
  EXPECT_EQ(CreateError(MakeWorkflow({n})),
            "node 'a': tenant: 'evil' differs from the workflow tenant 'acme'");
}

TEST(ValidationTest, KindUnspecified) {
  auto n = testing::MakeNode("a", v1::KIND_UNSPECIFIED);
  EXPECT_EQ(CreateError(MakeWorkflow({n})), "node 'a': kind: unspecified (want LLM or TOOL)");
}

TEST(ValidationTest, SideEffectWithoutIdempotencyKeyIsNotAnError) {
  auto t = Tool("pay");
  t.set_side_effect(true);
  auto r = Workflow::Create(MakeWorkflow({t, Tool("safe")}), Time{});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE((*r)->retryable(0));
  EXPECT_EQ((*r)->retry_block_reason(0),
            "node 'pay' is a side-effecting tool without an idempotency_key");
  EXPECT_TRUE((*r)->retryable(1));
  t.set_idempotency_key("k1");
  EXPECT_EQ(RetryBlockReason(t), "");
}

TEST(ValidationTest, ReadOfContextNoAncestorCreates) {
  auto a = WithRef(Llm("a"), "main", v1::CacheRef::CREATE);
  auto b = WithRef(Llm("b"), "main", v1::CacheRef::READ);  // not a descendant of a
  EXPECT_EQ(CreateError(MakeWorkflow({a, b})),
            "node 'b': cache_refs: READ of context 'main' that no ancestor creates");
  auto c = WithRef(Llm("c"), "other", v1::CacheRef::EXTEND);
  EXPECT_EQ(CreateError(MakeWorkflow({c})),
            "node 'c': cache_refs: EXTEND of context 'other' that no ancestor creates");
  // Through a transitive ancestor it is fine.
  auto m = Tool("m", {"a"});
  auto d = WithRef(Llm("d", {"m"}), "main", v1::CacheRef::EXTEND);
  EXPECT_EQ(CreateError(MakeWorkflow({d, m, a})), "OK");
}

TEST(ValidationTest, TwoCreatesOfOneContext) {
  auto a = WithRef(Llm("a"), "main", v1::CacheRef::CREATE);
  auto b = WithRef(Llm("b", {"a"}), "main", v1::CacheRef::CREATE);
  EXPECT_EQ(CreateError(MakeWorkflow({a, b})),
            "node 'b': cache_refs: context 'main' is already created by node 'a'");
}

TEST(ValidationTest, CacheRefFields) {
  auto a = WithRef(Llm("a"), "", v1::CacheRef::CREATE);
  EXPECT_EQ(CreateError(MakeWorkflow({a})), "node 'a': cache_refs[0].context: empty context name");
  a = WithRef(Llm("a"), "main", v1::CacheRef::MODE_UNSPECIFIED);
  EXPECT_EQ(CreateError(MakeWorkflow({a})),
            "node 'a': cache_refs[0].mode: unspecified mode for context 'main' (want CREATE, "
            "READ or EXTEND)");
  a = WithRef(WithRef(Llm("a"), "main", v1::CacheRef::CREATE), "main", v1::CacheRef::READ);
  EXPECT_EQ(CreateError(MakeWorkflow({a})),
            "node 'a': cache_refs[1].context: context 'main' referenced twice");
}

// keep_tokens: only on the first ref, only when it EXTENDs, never negative.
TEST(ValidationTest, KeepTokensFields) {
  auto a = WithRef(Llm("a"), "main", v1::CacheRef::CREATE);
  auto keep = [](v1::ProgramNode n, int k, int64_t tokens) {
    n.mutable_cache_refs(k)->set_keep_tokens(tokens);
    return n;
  };
  auto b = keep(WithRef(Llm("b", {"a"}), "main", v1::CacheRef::EXTEND), 0, 300);
  EXPECT_EQ(CreateError(MakeWorkflow({a, b})), "OK");
  EXPECT_EQ(CreateError(MakeWorkflow({keep(a, 0, 10)})),
            "node 'a': cache_refs[0].keep_tokens: 10 on a ref that does not EXTEND context "
            "'main' (it says how much of the context the node continues)");
  EXPECT_EQ(CreateError(MakeWorkflow({a, keep(b, 0, -1)})),
            "node 'b': cache_refs[0].keep_tokens: -1 is negative");
  auto c = WithRef(WithRef(Llm("c", {"a"}), "other", v1::CacheRef::CREATE), "main",
                   v1::CacheRef::EXTEND);
  EXPECT_EQ(CreateError(MakeWorkflow({a, keep(c, 1, 5)})),
            "node 'c': cache_refs[1].keep_tokens: only the first ref (the context the node "
            "extends) may cut its context");
}

TEST(ValidationTest, SharedPrefixFields) {
  auto with = [](v1::CacheRef::Mode mode, const std::string& id, int64_t tokens) {
    auto a = WithRef(Llm("a"), "main", mode);
    a.mutable_hints()->set_prompt_tokens(100);
    a.mutable_cache_refs(0)->set_shared_prefix(id);
    a.mutable_cache_refs(0)->set_shared_prefix_tokens(tokens);
    return a;
  };
  EXPECT_EQ(CreateError(MakeWorkflow({with(v1::CacheRef::CREATE, "sys", 60)})), "OK");
  EXPECT_EQ(CreateError(MakeWorkflow({with(v1::CacheRef::CREATE, "", 60)})),
            "node 'a': cache_refs[0].shared_prefix_tokens: 60 tokens without a shared_prefix id");
  EXPECT_EQ(CreateError(MakeWorkflow({with(v1::CacheRef::CREATE, "sys", 0)})),
            "node 'a': cache_refs[0].shared_prefix_tokens: missing (0) for shared prefix 'sys'");
  EXPECT_EQ(CreateError(MakeWorkflow({with(v1::CacheRef::CREATE, "sys", 101)})),
            "node 'a': cache_refs[0].shared_prefix_tokens: 101 exceed the node's prompt of 100 "
            "tokens");
  EXPECT_EQ(CreateError(MakeWorkflow({with(v1::CacheRef::CREATE, "s y", 60)}))
                .rfind("node 'a': cache_refs[0].shared_prefix: character 0x20 at offset 1", 0),
            0u);
  auto read = with(v1::CacheRef::READ, "sys", 60);
  EXPECT_EQ(CreateError(MakeWorkflow({WithRef(Llm("c"), "main", v1::CacheRef::CREATE),
                                      [&] {
                                        read.add_deps("c");
                                        return read;
                                      }()})),
            "node 'a': cache_refs[0].shared_prefix: 'sys' on a ref that does not CREATE context "
            "'main' (a context starts with its prefix)");
}

TEST(ValidationTest, NodeLimit) {
  Limits limits;
  limits.max_nodes = 2;
  EXPECT_EQ(CreateError(MakeWorkflow({Llm("a"), Llm("b"), Llm("c")}), Time{}, limits),
            "workflow 'w': nodes: 3 nodes exceed the limit 2");
  EXPECT_EQ(CreateError(MakeWorkflow({Llm("a"), Llm("b")}), Time{}, limits), "OK");
}

TEST(ValidationTest, EdgesPerNodeLimit) {
  Limits limits;
  limits.max_edges_per_node = 2;
  EXPECT_EQ(CreateError(MakeWorkflow({Llm("a"), Llm("b"), Llm("c"), Llm("d", {"a", "b", "c"})}),
                        Time{}, limits),
            "node 'd': deps: 3 dependencies exceed the limit 2");
  // The default is 256.
  std::vector<v1::ProgramNode> nodes;
  std::vector<std::string> ids;
  for (int i = 0; i < 257; ++i) {
    ids.push_back("n" + std::to_string(i));
    nodes.push_back(Tool(ids.back()));
  }
  nodes.push_back(Llm("join", ids));
  EXPECT_EQ(CreateError(MakeWorkflow(nodes)),
            "node 'join': deps: 257 dependencies exceed the limit 256");
}

TEST(ValidationTest, TimeoutAndRetryPolicy) {
  auto n = Llm("a");
  n.set_timeout_ms(-1);
  EXPECT_EQ(CreateError(MakeWorkflow({n})), "node 'a': timeout_ms: -1 is negative");
  n = Llm("a");
  n.mutable_retry()->set_max_attempts(-2);
  EXPECT_EQ(CreateError(MakeWorkflow({n})), "node 'a': retry.max_attempts: -2 is negative");
}

constexpr char kIdRule[] = " (ids are 1-128 bytes of A-Z a-z 0-9 . _ : -)";

TEST(ValidationTest, IdProblemAcceptsTheDocumentedSetOnly) {
  // What the service and the OpenAI front generate, and the rest of the set.
  for (const char* ok : {"wf_0123456789abcdef", "llm-0", "bash-1", "main", "main-2", "a.b:c_d-E9"})
    EXPECT_EQ(IdProblem(ok), "") << ok;
  EXPECT_EQ(IdProblem(std::string(128, 'x')), "");
  EXPECT_EQ(IdProblem(std::string(129, 'x')),
            std::string("129 bytes exceed the limit 128") + kIdRule);
  EXPECT_EQ(IdProblem(""), std::string("empty") + kIdRule);
  EXPECT_EQ(IdProblem("a\ab"), std::string("character 0x07 at offset 1 is not allowed") + kIdRule);
  EXPECT_EQ(IdProblem(std::string("a\0b", 3)),
            std::string("character 0x00 at offset 1 is not allowed") + kIdRule);
  EXPECT_EQ(IdProblem("a b"), std::string("character 0x20 at offset 1 is not allowed") + kIdRule);
  EXPECT_EQ(IdProblem("a/b"), std::string("character 0x2F at offset 1 is not allowed") + kIdRule);
  EXPECT_EQ(IdProblem("x\x7f"), std::string("character 0x7F at offset 1 is not allowed") + kIdRule);
  EXPECT_EQ(IdProblem("caf\xc3\xa9"),
            std::string("non-ASCII byte 0xC3 at offset 3 is not allowed") + kIdRule);
}

TEST(ValidationTest, ToolNamesAreTextWithoutControlCharacters) {
  constexpr char kRule[] = " (tool names are 1-256 bytes of text without control characters)";
  for (const char* ok : {"Bash", "web.search", "Web Search", "mcp__github__create_issue",
                         "caf\xc3\xa9 \xe2\x86\x92 x"})
    EXPECT_EQ(ToolNameProblem(ok), "") << ok;
  EXPECT_EQ(ToolNameProblem(std::string(256, 't')), "");
  EXPECT_EQ(ToolNameProblem(std::string(257, 't')),
            std::string("257 bytes exceed the limit 256") + kRule);
  EXPECT_EQ(ToolNameProblem("Ba\nsh"),
            std::string("character 0x0A at offset 2 is not allowed") + kRule);
  EXPECT_EQ(ToolNameProblem("x\x7f"),
            std::string("character 0x7F at offset 1 is not allowed") + kRule);
  EXPECT_EQ(ToolNameProblem("x\xc2\x85y"),
            std::string("control character U+0085 at offset 1 is not allowed") + kRule);
}

TEST(ValidationTest, IdsOutsideTheSetAreRefusedNamingTheField) {
  // A bad node id is not echoed: the node is named by its position.
  EXPECT_EQ(CreateError(MakeWorkflow({Llm("a"), Llm("b"), Tool("a\ab")})),
            std::string("node #2: id: character 0x07 at offset 1 is not allowed") + kIdRule);
  EXPECT_EQ(CreateError(MakeWorkflow({Llm(std::string(129, 'n'))})),
            std::string("node #0: id: 129 bytes exceed the limit 128") + kIdRule);
  EXPECT_EQ(CreateError(MakeWorkflow({Llm("a"), Llm("b", {"a", "x\ty"})})),
            std::string("node 'b': deps[1]: character 0x09 at offset 1 is not allowed") + kIdRule);
  EXPECT_EQ(CreateError(MakeWorkflow({WithRef(Llm("a"), "ma\rin", v1::CacheRef::CREATE)})),
            std::string("node 'a': cache_refs[0].context: character 0x0D at offset 2 is not "
                        "allowed") +
                kIdRule);
  auto tool = Tool("t");
  tool.set_tool_name("Bash\x1b[31m");
  EXPECT_EQ(CreateError(MakeWorkflow({tool})),
            "node 't': tool_name: character 0x1B at offset 4 is not allowed (tool names are "
            "1-256 bytes of text without control characters)");
  tool.set_tool_name("Web Search");
  EXPECT_EQ(CreateError(MakeWorkflow({tool})), "OK");
  auto wf = MakeWorkflow({Llm("a")});
  wf.set_id("w\x01");
  EXPECT_EQ(CreateError(wf),
            std::string("workflow: id: character 0x01 at offset 1 is not allowed") + kIdRule);
  wf.set_id("");
  EXPECT_EQ(CreateError(wf), "OK") << "an empty workflow id is the service's to fill";
  wf.set_id("w");
  wf.set_tenant("ac me");
  EXPECT_EQ(
      CreateError(wf),
      std::string("workflow 'w': tenant: character 0x20 at offset 2 is not allowed") + kIdRule);
  // Appends are held to the same rule, atomically.
  auto g = Workflow::Create(MakeWorkflow({Llm("a")}), Time{});
  ASSERT_TRUE(g.ok());
  Status st = (*g)->Append({Llm("b", {"a"}), Llm("c\n", {"b"})}, Time{});
  EXPECT_EQ(st.message(),
            std::string("node #2: id: character 0x0A at offset 1 is not allowed") + kIdRule);
  EXPECT_EQ((*g)->size(), 1u);
}

TEST(ValidationTest, CycleTextFormat) {
  EXPECT_EQ(CycleText({"a", "b", "c"}), "cycle: a -> b -> c -> a");
}

}  // namespace
}  // namespace switchyard::program_graph
