// Automatic prefix caching in CpuEngine (cpu_engine.h; CpuStepRunner, KvPool): a session
// that shares a 2k-token system prompt with another computes only its own suffix and gets
// the bits computing everything gives; a released context's blocks are found later until
// allocation reuses them — the least important sequences' first, then least recently
// freed; a model epoch change never matches; the engine's block accounting is the same
// with and without the cache; the host offload tier (offload_cache.h) gives back what the
// pool reused, bit-identically, as each request's kv_transfer_params allow.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/virtual_event_loop.h"
#include "cpu_engine/cpu_engine.h"
#include "cpu_engine/offload_cache.h"
#include "tests/common/wait_until.h"
#include "tests/cpu_engine/cpu_test_util.h"

namespace switchyard::cpu_engine {
namespace {

using executors::SeqContext;
using executors::SequenceSpec;
using executors::StepReport;

constexpr int64_t kBlock = 16;

// tiny-llama-2l with room for a 2k-token system prompt and a suffix.
const Model& LongModel() {
  static std::unique_ptr<Model> m = [] {
    ModelShape s = testing::TinyShape("tiny-llama-2l");
    s.max_positions = 4096;
    auto r = Model::Random(s);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? std::move(*r) : nullptr;
  }();
  return *m;
}

// One engine on a virtual-time loop, and what its reports said.
class Rig {
 public:
  Rig(bool caching, int64_t pool_blocks, uint64_t offload_bytes = 0) {
    executors::EngineLimits l;
    l.block_tokens = kBlock;
    l.pool_blocks = pool_blocks;
    l.max_num_seqs = 8;
    l.max_num_batched_tokens = 512;
    CpuEngine::Options o;
    o.model = &LongModel();
    o.tokens = &log_;
    o.prefix_caching = caching;
    o.offload_bytes = offload_bytes;
    auto e = CpuEngine::Create(&loop_, 0, l, o);
    EXPECT_TRUE(e.ok()) << e.status().ToString();
    engine_ = std::move(*e);
    engine_->SetListener([this](const StepReport& r) {
      computed_ += r.prefill_tokens;
      queries_ += r.prefix_query_tokens;
      hits_ += r.prefix_hit_tokens;
      for (const executors::SeqProgress& p : r.seqs) {
        cached_[p.key] = p.cached_tokens;
        if (p.token >= 0) out_[p.key].push_back(p.token);
        if (p.finished) done_[p.key] = p.status.ok();
      }
    });
  }
  CpuEngine& engine() { return *engine_; }
  TokenLog& log() { return log_; }
  // Admits `s`, runs it to its end; its tokens.
  std::vector<int32_t> Run(const SequenceSpec& s) {
    Status st = engine_->Admit(s);
    EXPECT_TRUE(st.ok()) << st.ToString();
    EXPECT_TRUE(::switchyard::testing::WaitUntil(
        [&] {
          loop_.Run();
          return done_.count(s.key) > 0;
        },
        ::switchyard::testing::kWaitSeconds, std::chrono::microseconds(200)));
    EXPECT_TRUE(done_[s.key]) << s.key << " failed";
    return out_[s.key];
  }
  void ResetCounts() { computed_ = queries_ = hits_ = 0; }
  int64_t computed() const { return computed_; }  // prefill tokens computed
  int64_t queries() const { return queries_; }
  int64_t hits() const { return hits_; }
  int64_t cached(const std::string& seq) { return cached_[seq]; }
  // The first `n` token ids of a context.
  std::vector<int32_t> Ids(const std::string& ctx, size_t n) {
    const std::vector<int32_t>* l = log_.Find(ctx);
    EXPECT_TRUE(l && l->size() >= n);
    return l ? std::vector<int32_t>(l->begin(), l->begin() + std::min(n, l->size()))
             : std::vector<int32_t>();
  }
  int64_t CachedPrefix(const std::string& ctx, size_t n) {
    return engine_->cached_prefix_tokens(Ids(ctx, n));
  }

 private:
  VirtualEventLoop loop_;
  TokenLog log_;
  std::unique_ptr<CpuEngine> engine_;
  int64_t computed_ = 0, queries_ = 0, hits_ = 0;
  std::map<std::string, int64_t> cached_;
  std::map<std::string, std::vector<int32_t>> out_;
  std::map<std::string, bool> done_;
};

// A front-door call: a new context filled with `ids`.
SequenceSpec Prompt(const std::string& key, const std::string& ctx, std::vector<int32_t> ids,
                    int64_t max_out, int priority = 0) {
  SequenceSpec s;
  s.key = key;
  s.contexts.push_back(SeqContext{ctx, 0, false});
  s.prefill_tokens = static_cast<int64_t>(ids.size());
  s.prompt_token_ids = std::move(ids);
  s.max_output_tokens = max_out;
  s.stop_at_eos = false;
  s.priority = priority;
  return s;
}

// A workflow-API call (synthetic ids): `fresh` new tokens after `held` (rebuilt unless
// resident).
SequenceSpec Counts(const std::string& key, const std::string& ctx, int64_t held, bool resident,
                    int64_t fresh, int64_t max_out, int priority = 0) {
  SequenceSpec s;
  s.key = key;
  s.contexts.push_back(SeqContext{ctx, held, resident && held > 0});
  s.prefill_tokens = fresh + (resident && held > 0 ? 0 : held);
  s.max_output_tokens = max_out;
  s.stop_at_eos = false;
  s.priority = priority;
  return s;
}

std::vector<int32_t> Concat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Positions [0, n) of `ca` in `a` and of `cb` in `b` hold the same KV bytes.
bool SameKv(CpuEngine& a, const std::string& ca, CpuEngine& b, const std::string& cb, int64_t n) {
  auto va = a.ExportKv(ca), vb = b.ExportKv(cb);
  if (!va.ok() || !vb.ok()) return false;
  const ModelShape& s = LongModel().shape();
  const size_t row = static_cast<size_t>(s.kv_dim()) * static_cast<size_t>(DTypeBytes(s.kv_dtype));
  for (int64_t p = 0; p < n; ++p)
    for (int64_t lk = 0; lk < 2 * s.layers; ++lk) {
      const size_t off = static_cast<size_t>((lk * kBlock + p % kBlock)) * row;
      const char* x = static_cast<const char*>(va->blocks[p / kBlock]) + off;
      const char* y = static_cast<const char*>(vb->blocks[p / kBlock]) + off;
      if (std::memcmp(x, y, row) != 0) return false;
    }
  return true;
}

double Ms(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

// The second session finds the system prompt's blocks in the first session's context
// (kept resident: copied) or among its freed blocks (released: adopted).
class SharedSystemPromptTest : public ::testing::TestWithParam<bool> {};

TEST_P(SharedSystemPromptTest, TheSecondSessionComputesOnlyItsSuffixBitIdentically) {
  const bool released = GetParam();
  const std::vector<int32_t> system = testing::Tokens(2048, 1, 256);
  const std::vector<int32_t> first = Concat(system, testing::Tokens(40, 2, 256));
  const std::vector<int32_t> second = Concat(system, testing::Tokens(37, 3, 256));
  Rig all(/*caching=*/false, 512);  // the reference: the second session computed whole
  auto t0 = std::chrono::steady_clock::now();
  const std::vector<int32_t> want = all.Run(Prompt("s2/n", "s2/c", second, 8));
  const double all_ms = Ms(std::chrono::steady_clock::now() - t0);
  ASSERT_EQ(all.computed(), 2085);

  Rig h(/*caching=*/true, 512);
  h.Run(Prompt("s1/n", "s1/c", first, 8));
  if (released) {
    ASSERT_TRUE(h.engine().Release("s1/c").ok());
    EXPECT_EQ(h.engine().blocks_used(), 0) << "kept blocks are free";
    EXPECT_EQ(h.engine().pool_used_bytes(), 0u);
    EXPECT_EQ(h.engine().kept_blocks(), (2088u + 8 - 1) / kBlock);
  }
  const int64_t used = h.engine().blocks_used();
  h.ResetCounts();
  t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(h.Run(Prompt("s2/n", "s2/c", second, 8)), want);
  const double hit_ms = Ms(std::chrono::steady_clock::now() - t0);
  EXPECT_EQ(h.computed(), 37) << "only the suffix is computed";
  EXPECT_EQ(h.cached("s2/n"), 2048);
  EXPECT_EQ(h.queries(), 2085);
  EXPECT_EQ(h.hits(), 2048);
  const int64_t valid = all.engine().valid_tokens("s2/c");
  EXPECT_EQ(h.engine().valid_tokens("s2/c"), valid);
  EXPECT_TRUE(SameKv(h.engine(), "s2/c", all.engine(), "s2/c", valid)) << "KV bit for bit";
  EXPECT_EQ(h.engine().blocks_used() - used, all.engine().blocks_used()) << "the same accounting";
  std::printf(
      "[prefix cache] second session (%s first session): %lld prefill tokens in %.1f ms "
      "with the cache, %lld in %.1f ms without\n",
      released ? "released" : "resident", static_cast<long long>(h.computed()), hit_ms,
      static_cast<long long>(all.computed()), all_ms);
}

INSTANTIATE_TEST_SUITE_P(FirstSession, SharedSystemPromptTest, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "Released" : "Resident"; });

// What one run of the pressure scenario saw (with or without the cache).
struct Seen {
  std::vector<int64_t> blocks_used;  // after each call and release
  std::vector<int32_t> rebuilt;      // the tokens of the rebuilt context's call
};

// Three contexts of 64 tokens (3 whole computed blocks each; y's sequence less important)
// are released, then other calls take the pool's free blocks, then z is rebuilt from 0.
Seen Pressure(Rig& h) {
  Seen seen;
  auto note = [&] {
    seen.blocks_used.push_back(h.engine().blocks_used());
    EXPECT_EQ(h.engine().pool_used_bytes(),
              static_cast<uint64_t>(h.engine().blocks_used()) * h.engine().kv_block_bytes());
  };
  for (const auto& [name, priority] : {std::pair{"x", 0}, {"y", 5}, {"z", 0}}) {
    const std::string n(name);
    h.Run(Counts(n + "/n", n + "/c", 0, true, 63, 1, priority));
    note();
  }
  for (const char* n : {"x/c", "y/c", "z/c"}) {
    EXPECT_TRUE(h.engine().Release(n).ok());
    note();
  }
  h.Run(Counts("w/n", "w/c", 0, true, 255, 1));  // 16 blocks: one more than never kept
  note();
  h.Run(Counts("v/n", "v/c", 0, true, 47, 1));  // 3 more blocks
  note();
  h.ResetCounts();
  seen.rebuilt = h.Run(Counts("z/n2", "z/c", 64, /*resident=*/false, 1, 2));
  note();
  return seen;
}

TEST(PrefixCachingTest, ReleasedBlocksHitUntilPressureReusesThemLessImportantFirstThenLru) {
  Rig plain(/*caching=*/false, 24);
  const Seen want = Pressure(plain);
  EXPECT_EQ(plain.hits(), 0);
  EXPECT_EQ(plain.computed(), 65);

  Rig h(/*caching=*/true, 24);
  for (const auto& [name, priority] : {std::pair{"x", 0}, {"y", 5}, {"z", 0}}) {
    const std::string n(name);
    h.Run(Counts(n + "/n", n + "/c", 0, true, 63, 1, priority));
  }
  for (const char* n : {"x/c", "y/c", "z/c"}) ASSERT_TRUE(h.engine().Release(n).ok());
  EXPECT_EQ(h.engine().kept_blocks(), 9u) << "3 whole computed blocks of each";
  for (const char* n : {"x/c", "y/c", "z/c"}) EXPECT_EQ(h.CachedPrefix(n, 64), 48) << n;
  h.Run(Counts("w/n", "w/c", 0, true, 255, 1));
  EXPECT_EQ(h.CachedPrefix("x/c", 64), 48);
  EXPECT_EQ(h.CachedPrefix("y/c", 64), 32) << "y's last block went first (priority 5)";
  EXPECT_EQ(h.CachedPrefix("z/c", 64), 48);
  h.Run(Counts("v/n", "v/c", 0, true, 47, 1));
  EXPECT_EQ(h.CachedPrefix("y/c", 64), 0) << "then y's other blocks";
  EXPECT_EQ(h.CachedPrefix("x/c", 64), 32) << "then the least recently freed: x's last block";
  EXPECT_EQ(h.CachedPrefix("z/c", 64), 48);
  h.ResetCounts();
  EXPECT_EQ(h.Run(Counts("z/n2", "z/c", 64, /*resident=*/false, 1, 2)), want.rebuilt);
  EXPECT_EQ(h.hits(), 48) << "z's kept blocks are adopted";
  EXPECT_EQ(h.computed(), 65 - 48);
  EXPECT_EQ(h.cached("z/n2"), 48);
  EXPECT_EQ(h.CachedPrefix("x/c", 64), 0) << "z's other blocks took x's";
}

TEST(PrefixCachingTest, TheEnginesBlockAccountingIsTheSameWithAndWithoutTheCache) {
  Rig plain(/*caching=*/false, 24), h(/*caching=*/true, 24);
  const Seen want = Pressure(plain);
  const Seen got = Pressure(h);
  EXPECT_EQ(got.blocks_used, want.blocks_used);
  EXPECT_EQ(got.rebuilt, want.rebuilt);
  EXPECT_GT(h.hits(), 0);
}

TEST(PrefixCachingTest, AModelEpochChangeNeverMatches) {
  Rig h(/*caching=*/true, 64);
  h.Run(Counts("x/n", "x/c", 0, true, 63, 1));
  const std::vector<int32_t> ids = h.Ids("x/c", 63);
  EXPECT_EQ(h.CachedPrefix("x/c", 64), 48);
  h.engine().SetModelEpoch(1);
  EXPECT_EQ(h.CachedPrefix("x/c", 64), 0) << "a held context's blocks of the old epoch";
  h.ResetCounts();
  h.Run(Prompt("y/n", "y/c", ids, 1));
  EXPECT_EQ(h.hits(), 0);
  EXPECT_EQ(h.computed(), 63);
  ASSERT_TRUE(h.engine().Release("x/c").ok());
  EXPECT_EQ(h.engine().kept_blocks(), 0u) << "blocks of the old epoch are not kept";
  ASSERT_TRUE(h.engine().Release("y/c").ok());
  EXPECT_EQ(h.engine().kept_blocks(), 3u);
  EXPECT_EQ(h.CachedPrefix("x/c", 64), 48) << "the new epoch's blocks match";
  h.engine().SetModelEpoch(2);
  EXPECT_EQ(h.engine().kept_blocks(), 0u);
  h.ResetCounts();
  h.Run(Prompt("z/n", "z/c", ids, 1));
  EXPECT_EQ(h.hits(), 0);
}

TEST(PrefixCachingTest, APrivateContextIsKeptWhenItsSequenceEnds) {
  Rig h(/*caching=*/true, 64);
  const std::vector<int32_t> ids = testing::Tokens(70, 4, 256);
  SequenceSpec s = Prompt("a/n", "", ids, 3);
  s.contexts.clear();  // no context: the sequence's own, released when it ends
  h.Run(s);
  EXPECT_EQ(h.engine().blocks_used(), 0);
  EXPECT_EQ(h.engine().kept_blocks(), 4u);
  h.ResetCounts();
  SequenceSpec again = s;
  again.key = "b/n";
  h.Run(again);
  EXPECT_EQ(h.hits(), 64);
  EXPECT_EQ(h.computed(), 6);
}

// The host offload tier: session a's 64-token prompt is released (4 whole blocks kept), a
// call that needs all 24 blocks of the pool reuses them (its 23 computed ones are kept in
// turn), then a's prompt comes again. With the
// tier its 3 matchable blocks (the last token is always computed) come back from host
// memory, bit for bit; `kv` is the returning call's kv_transfer_params, `first` its first's.
struct Offloaded {
  int64_t hits = 0, computed = 0;
  uint64_t stored = 0, loaded = 0;
  std::vector<int32_t> tokens;
  bool same_kv = false;
};
Offloaded ReturnAfterEviction(uint64_t offload_bytes, executors::KvTransferParams kv,
                              executors::KvTransferParams first = {}) {
  const std::vector<int32_t> ids = testing::Tokens(64, 5, 256);
  Rig plain(/*caching=*/false, 24);
  plain.Run(Prompt("p/n", "p/c", ids, 1));
  Rig h(/*caching=*/true, 24, offload_bytes);
  SequenceSpec a = Prompt("a/n", "a/c", ids, 1);
  a.kv_transfer = first;
  h.Run(a);
  EXPECT_TRUE(h.engine().Release("a/c").ok());
  EXPECT_EQ(h.engine().kept_blocks(), 4u);
  h.Run(Counts("b/n", "b/c", 0, true, 383, 1));  // 24 blocks: a's kept ones reused
  EXPECT_TRUE(h.engine().Release("b/c").ok());
  EXPECT_EQ(h.engine().kept_blocks(), 23u) << "b's 23 computed blocks only";
  h.ResetCounts();
  SequenceSpec again = Prompt("a2/n", "a2/c", ids, 1);
  again.kv_transfer = kv;
  Offloaded o;
  o.tokens = h.Run(again);
  o.hits = h.hits();
  o.computed = h.computed();
  if (const OffloadCache* t = h.engine().offload()) {
    o.stored = t->stored();
    o.loaded = t->loaded();
  }
  o.same_kv = SameKv(h.engine(), "a2/c", plain.engine(), "p/c", 64);
  EXPECT_EQ(o.tokens, plain.Run(Prompt("p2/n", "p2/c", ids, 1))) << "the same answer";
  return o;
}

TEST(OffloadTest, TheHostTierGivesBackWhatThePoolReusedBitForBit) {
  const Offloaded none = ReturnAfterEviction(0, {});
  EXPECT_EQ(none.hits, 0) << "without the tier, a's blocks are gone";
  EXPECT_EQ(none.computed, 64);
  const Offloaded o = ReturnAfterEviction(4 << 20, {});
  EXPECT_EQ(o.hits, 48);
  EXPECT_EQ(o.computed, 16);
  EXPECT_EQ(o.loaded, 3u);
  EXPECT_EQ(o.stored, 4u + 23u) << "every whole computed block freed, a's and b's";
  EXPECT_TRUE(o.same_kv) << "KV bit for bit";
  EXPECT_EQ(o.tokens, none.tokens);
}

TEST(OffloadTest, KvTransferParamsDecideWhatIsLoadedAndStored) {
  executors::KvTransferParams recompute;
  recompute.max_load_tokens = 0;
  Offloaded o = ReturnAfterEviction(4 << 20, recompute);
  EXPECT_EQ(o.hits, 0) << "max_load_tokens 0: recomputed";
  EXPECT_EQ(o.loaded, 0u);
  EXPECT_TRUE(o.same_kv);
  executors::KvTransferParams one_block;
  one_block.max_load_tokens = 20;
  EXPECT_EQ(ReturnAfterEviction(4 << 20, one_block).hits, 16) << "whole blocks within 20";
  executors::KvTransferParams gpu_only;
  gpu_only.load_from_host = false;
  EXPECT_EQ(ReturnAfterEviction(4 << 20, gpu_only).hits, 0) << "kv_load_tiers without CPU";
  executors::KvTransferParams no_store;
  no_store.max_offload_tokens = 0;
  o = ReturnAfterEviction(4 << 20, {}, no_store);
  EXPECT_EQ(o.stored, 23u) << "only b's blocks stored";
  EXPECT_EQ(o.hits, 0);
  executors::KvTransferParams two_blocks;
  two_blocks.max_offload_tokens = 32;
  o = ReturnAfterEviction(4 << 20, {}, two_blocks);
  EXPECT_EQ(o.stored, 2u + 23u);
  EXPECT_EQ(o.hits, 32) << "a's first two blocks";
}

TEST(OffloadTest, TheTierEvictsItsLeastRecentlyUsedBlock) {
  OffloadCache t(/*block_bytes=*/8, /*capacity_bytes=*/24);  // 3 blocks
  const char a[8] = "aaaaaaa", b[8] = "bbbbbbb", c[8] = "ccccccc", d[8] = "ddddddd";
  t.Store(1, a);
  t.Store(2, b);
  t.Store(3, c);
  ASSERT_NE(t.Load(1), nullptr);  // 1 is now the most recent: 2 goes first
  t.Store(4, d);
  EXPECT_FALSE(t.Contains(2));
  EXPECT_EQ(std::memcmp(t.Load(1), a, 8), 0);
  EXPECT_EQ(std::memcmp(t.Load(4), d, 8), 0);
  EXPECT_EQ(t.blocks(), 3u);
  EXPECT_EQ(t.evicted(), 1u);
  t.Store(3, c);  // present: refreshed, not stored again
  EXPECT_EQ(t.stored(), 4u);
  t.Clear();
  EXPECT_EQ(t.Load(1), nullptr);
  EXPECT_EQ(OffloadCache(8, 0).capacity_blocks(), 0u);
}

}  // namespace
}  // namespace switchyard::cpu_engine
