// Shared prefixes in the core (CoreOptions::share_prefixes): a tenant's prefix is held once
// per worker and referenced by the contexts there; a node finding it resident prefills only
// what follows; other tenants never share it; a copy nobody references is evicted only when
// memory is needed; a demoted context leaves the prefix to the others.
#include <gtest/gtest.h>

#include "scheduler/core.h"
#include "scheduler/reference_policies.h"
#include "tests/scheduler/test_util.h"

namespace switchyard::scheduler {
namespace {

using testing::BlockBytes;
using testing::CoreFixture;
using testing::EngineReport;
using testing::kBlock;
using testing::Llm;
using testing::LlmDone;
using testing::Submit;
using testing::Tool;
using testing::ToolDone;
using testing::Wf;
using testing::Xfer;

constexpr int64_t kPrefix = 160;  // 10 blocks
constexpr int64_t kPrompt = 200;  // 40 tokens after the prefix: 3 blocks

CoreOptions PrefixOptions(int64_t blocks, bool share = true) {
  CoreOptions o;
  o.workers = 1;
  o.hbm_bytes_per_worker = BlockBytes(blocks);
  o.kv_block_tokens = kBlock;
  o.use_disk = o.use_peer = false;
  o.share_prefixes = share;
  return o;
}

// Demotes every waiting context to the first target offered (else keeps it).
class DemotePolicy final : public Policy {
 public:
  std::string_view name() const override { return "demote"; }
  OrderKey Order(const ReadyNodeInfo& n) const override {
    return {0, ToSeconds(n.ready_since - Time{0})};
  }
  WaitDecision OnWait(const WaitInput& in) const override {
    if (in.options.empty()) return {};
    return {WaitAction::kDemote, in.options[0].dst, Seconds(100.0), 0, "demote"};
  }
};

v1::ProgramNode WithPrefix(v1::ProgramNode n, const std::string& id, int64_t tokens) {
  n.mutable_cache_refs(0)->set_shared_prefix(id);
  n.mutable_cache_refs(0)->set_shared_prefix_tokens(tokens);
  return n;
}

v1::Workflow Chat(const std::string& id, const std::string& tenant) {
  return Wf(id, tenant,
            {WithPrefix(Llm("x", {}, "c", v1::CacheRef::CREATE, kPrompt, 8), "sys", kPrefix)});
}

std::vector<const Command*> OfKind(const Commands& c, CommandKind k) {
  std::vector<const Command*> out;
  for (const Command& x : c.list)
    if (x.kind == k) out.push_back(&x);
  return out;
}

const std::string kKey = PrefixKey("t", "m", "sys");

TEST(CorePrefix, SecondContextOfTheTenantIsChargedItsSuffixOnlyAndPrefillsIt) {
  VllmFcfsPolicy policy;
  CoreFixture f(PrefixOptions(100), &policy);
  Commands c = f.At(0, Submit(Chat("a", "t")));
  ASSERT_EQ(OfKind(c, CommandKind::kPlace).size(), 1u);
  // The first node computes the prefix (recompute) into a copy charged once.
  EXPECT_EQ(OfKind(c, CommandKind::kPlace)[0]->recompute_tokens, kPrefix);
  EXPECT_EQ(f.core.hbm_used(0), BlockBytes(10 + 3));
  EXPECT_EQ(f.core.PrefixTokensOn(kKey, 0), kPrefix);
  ASSERT_TRUE(f.core.ContextPrefix("a/c").has_value());
  EXPECT_EQ(f.core.ContextPrefix("a/c")->key, kKey);
  // Submitted while the prefix is still being computed: it waits rather than read it.
  c = f.At(0.1, Submit(Chat("b", "t")));
  EXPECT_TRUE(OfKind(c, CommandKind::kPlace).empty());
  // Its prefill covered the prefix: the second context reads it and prefills 40 tokens.
  c = f.At(0.2, EngineReport(0, {{"a", "x", kPrompt, 1}}));
  ASSERT_EQ(OfKind(c, CommandKind::kPlace).size(), 1u);
  EXPECT_EQ(OfKind(c, CommandKind::kPlace)[0]->workflow_id, "b");
  EXPECT_EQ(OfKind(c, CommandKind::kPlace)[0]->recompute_tokens, 0);
  EXPECT_EQ(f.core.hbm_used(0), BlockBytes(10 + 3 + 3));
  EXPECT_EQ(f.core.prefix_stats().hit_tokens, kPrefix);
  EXPECT_EQ(f.core.prefix_stats().built_tokens, kPrefix);
  // Each context holds its own tokens, after the prefix.
  f.At(1, LlmDone("a", "x", 8, Seconds(1)));
  EXPECT_EQ(f.core.ContextTokens("a/c"), kPrompt - kPrefix + 8);
}

TEST(CorePrefix, WithoutSharingEveryContextHoldsAndComputesThePrefix) {
  VllmFcfsPolicy policy;
  CoreFixture f(PrefixOptions(100, /*share=*/false), &policy);
  Commands a = f.At(0, Submit(Chat("a", "t")));
  Commands b = f.At(0, Submit(Chat("b", "t")));
  ASSERT_EQ(OfKind(b, CommandKind::kPlace).size(), 1u);
  EXPECT_EQ(OfKind(b, CommandKind::kPlace)[0]->recompute_tokens, 0);
  EXPECT_EQ(f.core.hbm_used(0), 2 * BlockBytes(13));  // 200 tokens each
  EXPECT_FALSE(f.core.ContextPrefix("a/c").has_value());
  EXPECT_EQ(f.core.PrefixTokensOn(kKey, 0), -1);
  EXPECT_EQ(f.core.prefix_stats().hit_tokens, 0);
}

TEST(CorePrefix, DifferentTenantsNeverShare) {
  VllmFcfsPolicy policy;
  CoreFixture f(PrefixOptions(100), &policy);
  f.At(0, Submit(Chat("a", "t")));
  f.At(0.1, EngineReport(0, {{"a", "x", kPrompt, 1}}));
  Commands c = f.At(0.2, Submit(Chat("b", "u")));
  ASSERT_EQ(OfKind(c, CommandKind::kPlace).size(), 1u);
  EXPECT_EQ(OfKind(c, CommandKind::kPlace)[0]->recompute_tokens, kPrefix);  // its own copy
  EXPECT_EQ(f.core.hbm_used(0), 2 * BlockBytes(13));
  EXPECT_EQ(f.core.PrefixTokensOn(PrefixKey("u", "m", "sys"), 0), kPrefix);
  EXPECT_EQ(f.core.prefix_stats().hit_tokens, 0);
}

TEST(CorePrefix, LastReferenceGoneLeavesACopyThatIsEvictedWhenRoomIsNeeded) {
  VllmFcfsPolicy policy;
  CoreFixture f(PrefixOptions(40), &policy);
  f.At(0, Submit(Chat("a", "t")));
  f.At(0.1, EngineReport(0, {{"a", "x", kPrompt, 1}}));
  f.At(0.2, Submit(Chat("b", "t")));
  f.At(1, LlmDone("a", "x", 8, Seconds(1)));
  f.At(1, LlmDone("b", "x", 8, Seconds(1)));
  // Both workflows end: their contexts go; the prefix stays as a cache nobody references.
  Event close = testing::Of(EventKind::kWorkflowClosed, "a");
  f.At(2, close);
  close.workflow_id = "b";
  f.At(2, close);
  EXPECT_EQ(f.core.hbm_used(0), BlockBytes(10));
  EXPECT_EQ(f.core.PrefixTokensOn(kKey, 0), kPrefix);
  // A node of another tenant needing 35 of the 40 blocks: the idle copy is dropped.
  Commands c = f.At(3, Submit(Wf("big", "u", {Llm("y", {}, "c", v1::CacheRef::CREATE, 560, 8)})));
  std::vector<const Command*> discards = OfKind(c, CommandKind::kDiscard);
  ASSERT_EQ(discards.size(), 1u);
  EXPECT_EQ(discards[0]->context, kKey);
  EXPECT_EQ(discards[0]->src, (Location{Tier::kHbm, 0}));
  EXPECT_EQ(OfKind(c, CommandKind::kPlace).size(), 1u);
  EXPECT_EQ(f.core.PrefixTokensOn(kKey, 0), -1);
  EXPECT_EQ(f.core.hbm_used(0), BlockBytes(35));
  EXPECT_EQ(f.core.prefix_stats().evictions, 1u);
}

TEST(CorePrefix, AReferencedCopyIsNotEvicted) {
  VllmFcfsPolicy policy;
  CoreFixture f(PrefixOptions(40), &policy);
  f.At(0, Submit(Chat("a", "t")));
  f.At(0.1, EngineReport(0, {{"a", "x", kPrompt, 1}}));
  // The context is still alive (its workflow is open): the big node's room comes from the
  // context (discarded under vLLM's rule), never from the prefix it references...
  f.At(1, LlmDone("a", "x", 8, Seconds(1)));
  Commands c = f.At(3, Submit(Wf("big", "u", {Llm("y", {}, "c", v1::CacheRef::CREATE, 480, 8)})));
  for (const Command* d : OfKind(c, CommandKind::kDiscard)) EXPECT_NE(d->context, kKey);
  // ...which the discard leaves idle, so it goes once the context is gone and room is short.
  EXPECT_EQ(f.core.PrefixTokensOn(kKey, 0), kPrefix);
}

TEST(CorePrefix, ADemotedContextLeavesTheSharedPrefixToTheOther) {
  DemotePolicy policy;
  CoreFixture f(PrefixOptions(100), &policy);
  v1::Workflow a = Chat("a", "t");
  *a.add_nodes() = Tool("tool", {"x"}, "grep", 1000);
  *a.add_nodes() = Llm("y", {"tool"}, "c", v1::CacheRef::EXTEND, 16, 8);
  f.At(0, Submit(a));
  f.At(0.1, EngineReport(0, {{"a", "x", kPrompt, 1}}));
  f.At(0.2, Submit(Chat("b", "t")));
  f.At(1, LlmDone("a", "x", 8, Seconds(1)));
  Commands c = f.At(1.1, testing::Of(EventKind::kToolStarted, "a", "tool"));
  std::vector<const Command*> demotes = OfKind(c, CommandKind::kDemote);
  ASSERT_EQ(demotes.size(), 1u);
  EXPECT_EQ(demotes[0]->context, "a/c");
  EXPECT_EQ(demotes[0]->bytes, BlockBytes(3));  // 48 own tokens; the prefix does not move
  f.At(1.2, Xfer(demotes[0]->transfer_id));
  EXPECT_EQ(f.core.ContextLocation("a/c")->tier, Tier::kHost);
  EXPECT_EQ(f.core.PrefixTokensOn(kKey, 0), kPrefix);
  EXPECT_EQ(f.core.hbm_used(0), BlockBytes(10 + 3));  // the prefix and b's context
  // The tool returns: the context comes back and its node reads the prefix still there.
  // Moved back or recomputed, whichever is cheaper: only its own 48 tokens, either way.
  c = f.At(2, ToolDone("a", "tool"));
  std::vector<const Command*> prefetches = OfKind(c, CommandKind::kPrefetch);
  int64_t own = 48;
  if (!prefetches.empty()) {
    c = f.At(2.1, Xfer(prefetches[0]->transfer_id));
    own = 0;
  }
  ASSERT_EQ(OfKind(c, CommandKind::kPlace).size(), 1u);
  EXPECT_EQ(OfKind(c, CommandKind::kPlace)[0]->recompute_tokens, own);
  EXPECT_EQ(f.core.prefix_stats().reads, 2u);
  // Saved only when rebuilt: a context that kept its blocks would not recompute its prefix.
  EXPECT_EQ(f.core.prefix_stats().hit_tokens, own > 0 ? 2 * kPrefix : kPrefix);
}

TEST(CorePrefix, PreemptedBeforeThePrefixWasComputedDropsThePartialCopy) {
  VllmFcfsPolicy policy;
  CoreFixture f(PrefixOptions(100), &policy);
  f.At(0, Submit(Chat("a", "t")));
  EXPECT_EQ(f.core.PrefixTokensOn(kKey, 0), kPrefix);
  // The node fails part-way through its prefill: the copy holds part of the prefix.
  Commands c = f.At(0.1, LlmDone("a", "x", 0, Seconds(0), Status::Internal("engine")));
  bool dropped = false;
  for (const Command* d : OfKind(c, CommandKind::kDiscard)) dropped |= d->context == kKey;
  EXPECT_TRUE(dropped);
  EXPECT_EQ(f.core.PrefixTokensOn(kKey, 0), -1);
  EXPECT_EQ(f.core.hbm_used(0), 0u);
}

}  // namespace
}  // namespace switchyard::scheduler
