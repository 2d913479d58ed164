#include "executors/simulated_engine.h"

#include <gtest/gtest.h>

#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "base/virtual_event_loop.h"
#include "tests/executors/test_util.h"

namespace switchyard::executors {
namespace {

using testing::ConfigPath;

// Hand-checkable step times: 1 ms + 10 us per prefill token + 100 us per decoding sequence
// + 1 us per KV token read.
class LinearCost final : public StepCostModel {
 public:
  std::string_view name() const override { return "linear"; }
  Duration StepTime(const StepShape& s) const override {
    return Millis(1) + Micros(10) * s.prefill_tokens + Micros(100) * s.decode_seqs +
           Micros(1) * s.kv_tokens_read;
  }
};

EngineLimits Limits(int64_t budget, int64_t pool_blocks, int max_seqs = 256,
                    int64_t block_tokens = 16) {
  EngineLimits l;
  l.max_num_batched_tokens = budget;
  l.max_num_seqs = max_seqs;
  l.block_tokens = block_tokens;
  l.pool_blocks = pool_blocks;
  return l;
}

SequenceSpec Seq(const std::string& key, int64_t prefill, int64_t max_out,
                 std::vector<SeqContext> contexts = {}) {
  SequenceSpec s;
  s.key = key;
  s.prefill_tokens = prefill;
  s.max_output_tokens = max_out;
  s.contexts = std::move(contexts);
  return s;
}

// An engine on a virtual loop that records every report.
struct SimulatedHarness {
  explicit SimulatedHarness(EngineLimits limits, const StepCostModel* cost = nullptr,
                            SimulatedEngine::Options o = {})
      : engine(&loop, 3, limits, cost ? cost : &linear, std::move(o)) {
    engine.SetListener([this](const StepReport& r) {
      reports.push_back(r);
      if (on_report) on_report(r);
    });
  }
  // Runs callbacks until `n` reports have come (or nothing is left to run).
  void RunUntilReports(size_t n) {
    while (reports.size() < n && loop.RunOne()) {
    }
  }
  // Reports whose seqs mention `key`.
  std::vector<SeqProgress> ProgressOf(const std::string& key) const {
    std::vector<SeqProgress> out;
    for (const StepReport& r : reports)
      for (const SeqProgress& p : r.seqs)
        if (p.key == key) out.push_back(p);
    return out;
  }
  LinearCost linear;
  VirtualEventLoop loop;
  SimulatedEngine engine;
  std::vector<StepReport> reports;
  std::function<void(const StepReport&)> on_report;
};

TEST(SimulatedEngine, SinglePrefillThenDecode) {
  SimulatedHarness h(Limits(8192, 100));
  EXPECT_EQ(h.engine.name(), "simulated engine");
  ASSERT_TRUE(h.engine.Admit(Seq("wf/a", 100, 5, {{"wf/c", 0, false}})).ok());
  EXPECT_EQ(h.engine.running(), 1u);
  EXPECT_EQ(h.engine.blocks_used(), 7);  // the whole prefill is allocated at admission
  EXPECT_TRUE(h.reports.empty());        // never synchronously inside Admit
  h.loop.Run();
  // The step that completes the prefill emits the first token; 4 decode steps follow.
  ASSERT_EQ(h.reports.size(), 5u);
  const StepReport& first = h.reports[0];
  EXPECT_EQ(first.worker, 3);
  EXPECT_EQ(first.start, Time{0});
  EXPECT_EQ(first.prefill_tokens, 100);
  EXPECT_EQ(first.decode_seqs, 0);
  EXPECT_EQ(first.kv_tokens_read, 0);
  EXPECT_EQ(first.end - first.start, Millis(1) + Micros(1000));
  ASSERT_EQ(first.seqs.size(), 1u);
  EXPECT_EQ(first.seqs[0].prefill_done, 100);
  EXPECT_EQ(first.seqs[0].output_done, 1);
  for (size_t i = 1; i < 5; ++i) {
    const StepReport& r = h.reports[i];
    EXPECT_EQ(r.start, h.reports[i - 1].end);
    EXPECT_EQ(r.prefill_tokens, 0);
    EXPECT_EQ(r.decode_seqs, 1);
    EXPECT_EQ(r.kv_tokens_read, 100 + static_cast<int64_t>(i));  // prefill + outputs so far
    EXPECT_EQ(r.end - r.start, Millis(1) + Micros(100) + Micros(100 + i));
    EXPECT_EQ(r.seqs[0].output_done, static_cast<int64_t>(i) + 1);
    EXPECT_EQ(r.seqs[0].finished, i == 4);
  }
  EXPECT_TRUE(h.reports.back().seqs[0].status.ok());
  EXPECT_EQ(h.engine.running(), 0u);
  // The context keeps old + new + output tokens for the next call.
  EXPECT_EQ(h.engine.context_tokens("wf/c"), 105);
  EXPECT_EQ(h.engine.blocks_used(), 7);
  EXPECT_EQ(h.reports.back().blocks_used, 7);
  EXPECT_EQ(h.reports.back().blocks_total, 100);
  EXPECT_EQ(h.loop.pending(), 0u);
}

TEST(SimulatedEngine, RecordedOutputLengthStopsBeforeTheCap) {
  SimulatedHarness h(Limits(8192, 100));
  SequenceSpec s = Seq("wf/a", 10, 50);
  s.actual_output_tokens = 3;
  ASSERT_TRUE(h.engine.Admit(s).ok());
  h.loop.Run();
  ASSERT_EQ(h.reports.size(), 3u);
  EXPECT_TRUE(h.reports.back().seqs[0].finished);
  EXPECT_EQ(h.reports.back().seqs[0].output_done, 3);
  // A one-shot call's private context is released when it finishes.
  EXPECT_EQ(h.engine.context_tokens("wf/a"), -1);
  EXPECT_EQ(h.engine.blocks_used(), 0);
}

TEST(SimulatedEngine, StepTimeGrowsWithBatchSize) {
  auto cost = RooflineStepCost::FromFiles(ConfigPath("models/llama-3.1-8b.json"),
                                          ConfigPath("gpus/h200.json"));
  ASSERT_TRUE(cost.ok()) << cost.status();
  Duration prev{0};
  for (int n : {1, 8, 64}) {
    SimulatedHarness h(Limits(8192, 100000), &*cost);
    for (int i = 0; i < n; ++i) {
      std::string ctx = "wf/c" + std::to_string(i);
      ASSERT_TRUE(h.engine.Import(ctx, 2000).ok());
      ASSERT_TRUE(h.engine.Admit(Seq("wf/n" + std::to_string(i), 0, 3, {{ctx, 2000, true}})).ok());
    }
    h.loop.Run();
    ASSERT_EQ(h.reports.size(), 3u) << n;  // everyone decodes in the same three steps
    EXPECT_EQ(h.reports[0].decode_seqs, n);
    EXPECT_EQ(h.reports[0].kv_tokens_read, 2000 * n);
    Duration step = h.reports[0].end - h.reports[0].start;
    EXPECT_GT(step, prev) << n;
    prev = step;
  }
}

TEST(SimulatedEngine, PoolBoundsAdmission) {
  SimulatedHarness h(Limits(8192, 10));
  ASSERT_TRUE(h.engine.Admit(Seq("wf/a", 100, 2)).ok());  // 7 blocks
  EXPECT_EQ(h.engine.blocks_used(), 7);
  Status st = h.engine.Admit(Seq("wf/b", 60, 2, {{"wf/cb", 0, false}}));
  EXPECT_TRUE(st.IsFailedPrecondition()) << st;
  EXPECT_NE(st.message().find("needs 4 KV blocks, 3 of 10 free"), std::string::npos) << st;
  EXPECT_EQ(h.engine.blocks_used(), 7);  // nothing allocated
  EXPECT_EQ(h.engine.context_tokens("wf/cb"), -1);
  EXPECT_EQ(h.engine.running(), 1u);
  ASSERT_TRUE(h.engine.Admit(Seq("wf/b", 40, 2, {{"wf/cb", 0, false}})).ok());  // 3 fit
  EXPECT_EQ(h.engine.blocks_used(), 10);
  h.loop.Run();
  // a's tokens were in its private context (released when it finished); b's stay in wf/cb.
  EXPECT_EQ(h.engine.context_tokens("wf/cb"), 42);
  EXPECT_EQ(h.engine.blocks_used(), 3);
}

TEST(SimulatedEngine, DecodeExhaustionStallsUntilARelease) {
  SimulatedHarness h(Limits(8192, 3));
  ASSERT_TRUE(h.engine.Import("wf/other", 8).ok());                             // 1 block
  ASSERT_TRUE(h.engine.Admit(Seq("wf/a", 20, 20, {{"wf/c", 0, false}})).ok());  // 2 blocks
  h.loop.Run();
  // Tokens 21..32 fit in the two blocks (outputs 1..12); output 13 needs a third block.
  ASSERT_EQ(h.reports.size(), 13u);
  for (size_t i = 0; i < 12; ++i) EXPECT_TRUE(h.reports[i].exhausted.empty()) << i;
  const StepReport& stall = h.reports[12];
  EXPECT_EQ(stall.start, stall.end);
  EXPECT_EQ(stall.start, h.reports[11].end);
  EXPECT_TRUE(stall.seqs.empty());
  EXPECT_EQ(stall.exhausted, std::vector<std::string>{"wf/a"});
  EXPECT_EQ(stall.blocks_used, 3);
  EXPECT_EQ(h.engine.running(), 1u);
  EXPECT_EQ(h.engine.context_tokens("wf/c"), 32);
  EXPECT_EQ(h.loop.pending(), 0u);  // waits: no busy loop in virtual time
  h.loop.RunFor(Seconds(10));
  EXPECT_EQ(h.reports.size(), 13u);
  // Freeing a block resumes it.
  ASSERT_TRUE(h.engine.Release("wf/other").ok());
  h.loop.Run();
  ASSERT_EQ(h.reports.size(), 13u + 8u);
  EXPECT_TRUE(h.reports.back().seqs[0].finished);
  EXPECT_EQ(h.reports.back().seqs[0].output_done, 20);
  EXPECT_EQ(h.engine.context_tokens("wf/c"), 40);
  EXPECT_EQ(h.engine.blocks_used(), 3);
}

TEST(SimulatedEngine, ExhaustedSequenceSkipsWhileOthersRun) {
  SimulatedHarness h(Limits(8192, 4));
  ASSERT_TRUE(h.engine.Import("wf/ca", 16).ok());
  ASSERT_TRUE(h.engine.Import("wf/cb", 1).ok());
  ASSERT_TRUE(h.engine.Import("wf/full", 32).ok());  // pool full: 1 + 1 + 2 blocks
  ASSERT_TRUE(h.engine.Admit(Seq("wf/a", 0, 4, {{"wf/ca", 16, true}})).ok());
  ASSERT_TRUE(h.engine.Admit(Seq("wf/b", 0, 4, {{"wf/cb", 1, true}})).ok());
  h.on_report = [&](const StepReport& r) {
    EXPECT_EQ(r.exhausted, std::vector<std::string>{"wf/a"});  // in every step
    for (const SeqProgress& p : r.seqs) EXPECT_EQ(p.key, "wf/b");
  };
  h.loop.Run();
  // b decodes 4 tokens (its block has room); a is exhausted in every step and then stalls.
  ASSERT_EQ(h.reports.size(), 5u);
  EXPECT_EQ(h.ProgressOf("wf/b").back().output_done, 4);
  EXPECT_TRUE(h.ProgressOf("wf/a").empty());
  EXPECT_EQ(h.reports[4].exhausted, std::vector<std::string>{"wf/a"});
  EXPECT_TRUE(h.reports[4].seqs.empty());
  // Releasing an unused context frees blocks and resumes it.
  h.on_report = nullptr;
  ASSERT_TRUE(h.engine.Release("wf/full").ok());
  h.loop.Run();
  EXPECT_TRUE(h.ProgressOf("wf/a").back().finished);
  EXPECT_EQ(h.engine.context_tokens("wf/ca"), 20);
}

TEST(SimulatedEngine, ChunkedPrefillMixesWithDecodeUnderTheBudget) {
  SimulatedHarness h(Limits(64, 1000));
  for (int i = 0; i < 4; ++i) {
    std::string ctx = "wf/d" + std::to_string(i);
    ASSERT_TRUE(h.engine.Import(ctx, 10).ok());
    ASSERT_TRUE(h.engine.Admit(Seq("wf/dec" + std::to_string(i), 0, 100, {{ctx, 10, true}})).ok());
  }
  ASSERT_TRUE(h.engine.Admit(Seq("wf/long", 200, 2, {{"wf/l", 0, false}})).ok());
  h.RunUntilReports(4);
  ASSERT_EQ(h.reports.size(), 4u);
  std::vector<int64_t> chunks;
  for (const StepReport& r : h.reports) {
    EXPECT_EQ(r.decode_seqs, 4);
    EXPECT_LE(r.prefill_tokens + r.decode_seqs, 64);
    chunks.push_back(r.prefill_tokens);
  }
  EXPECT_EQ(chunks, (std::vector<int64_t>{60, 60, 60, 20}));
  // Chunk k reads the KV of the chunks before it: c = 0, 60, 120, 180 (+ the decoders').
  EXPECT_EQ(h.reports[1].kv_tokens_read, 60 + 4 * 11);
  auto p = h.ProgressOf("wf/long");
  ASSERT_EQ(p.size(), 4u);
  EXPECT_EQ(p[2].prefill_done, 180);
  EXPECT_EQ(p[2].output_done, 0);
  EXPECT_EQ(p[3].prefill_done, 200);
  EXPECT_EQ(p[3].output_done, 1);  // the step finishing the prefill emits the first token
  h.RunUntilReports(5);
  ASSERT_EQ(h.reports.size(), 5u);
  EXPECT_EQ(h.reports[4].decode_seqs, 5);
  EXPECT_TRUE(h.ProgressOf("wf/long").back().finished);
}

// max_chunk_tokens bounds each sequence's chunk, whatever the step's budget leaves: a long
// prompt takes several steps while a short one admitted after it shares each of them.
TEST(SimulatedEngine, MaxChunkTokensBoundsEachSequencesChunk) {
  EngineLimits limits = Limits(8192, 1000);
  limits.max_chunk_tokens = 100;
  SimulatedHarness h(limits);
  ASSERT_TRUE(h.engine.Admit(Seq("wf/long", 250, 2, {{"wf/l", 0, false}})).ok());
  ASSERT_TRUE(h.engine.Admit(Seq("wf/short", 40, 2, {{"wf/s", 0, false}})).ok());
  h.RunUntilReports(3);
  ASSERT_EQ(h.reports.size(), 3u);
  auto chunks = [&](const std::string& key) {
    std::vector<int64_t> out;
    int64_t done = 0;
    for (const SeqProgress& p : h.ProgressOf(key)) {
      out.push_back(p.prefill_done - done);
      done = p.prefill_done;
    }
    return out;
  };
  EXPECT_EQ(chunks("wf/long"), (std::vector<int64_t>{100, 100, 50}));
  EXPECT_EQ(h.reports[0].prefill_tokens, 140) << "the short prompt shares the first step";
  EXPECT_EQ(h.ProgressOf("wf/short")[0].output_done, 1);
  // Without the cap the long prompt is one chunk (the control).
  SimulatedHarness whole(Limits(8192, 1000));
  ASSERT_TRUE(whole.engine.Admit(Seq("wf/long", 250, 2, {{"wf/l", 0, false}})).ok());
  whole.RunUntilReports(1);
  ASSERT_EQ(whole.reports.size(), 1u);
  EXPECT_EQ(whole.reports[0].prefill_tokens, 250);
}

TEST(SimulatedEngine, MaxNumSeqsCapsTheBatch) {
  SimulatedHarness h(Limits(8192, 1000, /*max_seqs=*/2));
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(h.engine.Admit(Seq("wf/" + std::to_string(i), 8, 2)).ok());
  h.loop.Run();
  ASSERT_FALSE(h.reports.empty());
  EXPECT_EQ(h.reports[0].seqs.size(), 2u);
  for (const StepReport& r : h.reports) EXPECT_LE(r.seqs.size(), 2u);
  EXPECT_TRUE(h.ProgressOf("wf/2").back().finished);
}

TEST(SimulatedEngine, PreemptMidPrefillKeepsComputedKv) {
  SimulatedHarness h(Limits(64, 1000));
  ASSERT_TRUE(h.engine.Admit(Seq("wf/a", 200, 4, {{"wf/c", 0, false}})).ok());
  EXPECT_EQ(h.engine.context_tokens("wf/c"), 200);  // allocated for the whole prefill
  h.loop.RunOne();                                  // the kick: step 1 starts
  h.loop.RunOne();                                  // step 1 ends
  ASSERT_EQ(h.reports.size(), 1u);
  h.loop.RunOne();  // step 2 starts
  ASSERT_TRUE(h.engine.step_in_flight());
  auto p = h.engine.Preempt("wf/a");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->prefill_done, 64);
  EXPECT_EQ(p->output_done, 0);
  EXPECT_EQ(h.engine.running(), 0u);
  EXPECT_EQ(h.engine.context_tokens("wf/c"), 64);  // what was computed stays
  EXPECT_EQ(h.engine.blocks_used(), 4);
  EXPECT_TRUE(h.engine.Preempt("wf/a").status().IsNotFound());
  h.loop.Run();
  // The in-flight step still ends (its report as launched), without the preempted one.
  ASSERT_EQ(h.reports.size(), 2u);
  EXPECT_EQ(h.reports[1].prefill_tokens, 64);
  EXPECT_TRUE(h.reports[1].seqs.empty());
  EXPECT_EQ(h.ProgressOf("wf/a").size(), 1u);
  // Resuming: the computed part is resident now.
  SequenceSpec again = Seq("wf/a", 136, 4, {{"wf/c", 64, true}});
  ASSERT_TRUE(h.engine.Admit(again).ok());
  h.loop.Run();
  EXPECT_TRUE(h.ProgressOf("wf/a").back().finished);
  EXPECT_EQ(h.engine.context_tokens("wf/c"), 204);
}

TEST(SimulatedEngine, PreemptShrinksRebuiltContextsInPrefillOrder) {
  SimulatedHarness h(Limits(64, 1000));
  ASSERT_TRUE(h.engine.Import("wf/p", 30).ok());
  // Rebuild wf/r (100 tokens) then 50 new tokens onto wf/p.
  ASSERT_TRUE(h.engine.Admit(Seq("wf/a", 150, 4, {{"wf/p", 30, true}, {"wf/r", 100, false}})).ok());
  EXPECT_EQ(h.engine.context_tokens("wf/p"), 80);
  EXPECT_EQ(h.engine.context_tokens("wf/r"), 100);
  h.loop.RunOne();
  h.loop.RunOne();  // 64 done
  h.loop.RunOne();
  h.loop.RunOne();  // 128 done: wf/r complete, 28 new tokens
  ASSERT_EQ(h.reports.size(), 2u);
  EXPECT_EQ(h.reports[1].kv_tokens_read, 30 + 64);  // cached + the first chunk
  h.loop.RunOne();                                  // step 3 in flight
  ASSERT_TRUE(h.engine.Preempt("wf/a").ok());
  EXPECT_EQ(h.engine.context_tokens("wf/r"), 100);
  EXPECT_EQ(h.engine.context_tokens("wf/p"), 58);
  EXPECT_EQ(h.engine.blocks_used(), BlocksFor(100, 16) + BlocksFor(58, 16));
}

TEST(SimulatedEngine, PreemptDuringDecodeDropsTheInFlightToken) {
  SimulatedHarness h(Limits(8192, 1000));
  ASSERT_TRUE(h.engine.Import("wf/c", 16).ok());
  ASSERT_TRUE(h.engine.Admit(Seq("wf/a", 0, 10, {{"wf/c", 16, true}})).ok());
  ASSERT_TRUE(h.engine.Admit(Seq("wf/b", 5, 10)).ok());
  h.loop.RunOne();  // step 1 starts: a decodes token 17 (a new block), b prefills
  // The new block is taken when the step ends, not before (between steps the pool is
  // exactly what the reports said).
  EXPECT_EQ(h.engine.context_tokens("wf/c"), 16);
  EXPECT_EQ(h.engine.blocks_used(), 2);
  auto p = h.engine.Preempt("wf/a");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->output_done, 0);
  EXPECT_EQ(h.engine.context_tokens("wf/c"), 16);
  EXPECT_EQ(h.engine.blocks_used(), 1 + 1);
  h.loop.Run();
  EXPECT_TRUE(h.ProgressOf("wf/a").empty());
  EXPECT_TRUE(h.ProgressOf("wf/b").back().finished);
  EXPECT_EQ(h.reports[0].seqs.size(), 1u);
}

TEST(SimulatedEngine, BlockTakenDuringTheStepMakesTheTokenWait) {
  SimulatedHarness h(Limits(8192, 3));
  ASSERT_TRUE(h.engine.Import("wf/c", 16).ok());
  ASSERT_TRUE(h.engine.Admit(Seq("wf/a", 0, 3, {{"wf/c", 16, true}})).ok());
  h.loop.RunOne();  // step 1 starts: a's token 17 will need a second block
  ASSERT_TRUE(h.engine.step_in_flight());
  ASSERT_TRUE(h.engine.Admit(Seq("wf/b", 32, 2)).ok());  // takes the two free blocks
  EXPECT_EQ(h.engine.blocks_used(), 3);
  h.RunUntilReports(1);
  const StepReport& r = h.reports[0];
  EXPECT_EQ(r.decode_seqs, 1);  // priced as launched
  EXPECT_EQ(r.exhausted, std::vector<std::string>{"wf/a"});
  ASSERT_EQ(r.seqs.size(), 1u);
  EXPECT_EQ(r.seqs[0].output_done, 0);  // no token without a slot
  EXPECT_EQ(h.engine.context_tokens("wf/c"), 16);
  EXPECT_EQ(r.blocks_used, 3);
}

TEST(SimulatedEngine, RecomputeSlowsCoRunningDecode) {
  auto cost = RooflineStepCost::FromFiles(ConfigPath("models/llama-3.1-8b.json"),
                                          ConfigPath("gpus/h200.json"));
  ASSERT_TRUE(cost.ok()) << cost.status();
  auto first_step_of_decoder = [&](bool with_recompute) {
    SimulatedHarness h(Limits(8192, 100000), &*cost);
    EXPECT_TRUE(h.engine.Import("wf/d", 1000).ok());
    EXPECT_TRUE(h.engine.Admit(Seq("wf/dec", 0, 4, {{"wf/d", 1000, true}})).ok());
    if (with_recompute) {  // a discarded 6000-token context rebuilt by prefill
      EXPECT_TRUE(h.engine.Admit(Seq("wf/re", 6100, 4, {{"wf/r", 6000, false}})).ok());
    }
    h.loop.Run();
    for (const StepReport& r : h.reports)
      for (const SeqProgress& p : r.seqs)
        if (p.key == "wf/dec") return r.end - r.start;
    return Duration{0};
  };
  Duration alone = first_step_of_decoder(false);
  Duration beside = first_step_of_decoder(true);
  EXPECT_GT(alone, Duration{0});
  EXPECT_GT(beside, 10 * alone) << FormatDuration(alone) << " vs " << FormatDuration(beside);
}

TEST(SimulatedEngine, ImportAndReleaseAccounting) {
  SimulatedHarness h(Limits(8192, 10));
  ASSERT_TRUE(h.engine.Import("wf/a", 33).ok());
  EXPECT_EQ(h.engine.blocks_used(), 3);
  ASSERT_TRUE(h.engine.Import("wf/a", 10).ok());  // resized
  EXPECT_EQ(h.engine.blocks_used(), 1);
  EXPECT_EQ(h.engine.context_tokens("wf/a"), 10);
  Status full = h.engine.Import("wf/b", 160);
  EXPECT_TRUE(full.IsFailedPrecondition()) << full;
  EXPECT_EQ(h.engine.context_tokens("wf/b"), -1);
  EXPECT_EQ(h.engine.blocks_used(), 1);
  ASSERT_TRUE(h.engine.Import("wf/b", 144).ok());
  EXPECT_EQ(h.engine.blocks_used(), 10);
  EXPECT_TRUE(h.engine.Import("wf/a", -1).IsInvalidArgument());
  ASSERT_TRUE(h.engine.Release("wf/b").ok());
  EXPECT_EQ(h.engine.blocks_used(), 1);
  EXPECT_TRUE(h.engine.Release("wf/unknown").ok());
  // A resident context the engine does not hold, named.
  Status st = h.engine.Admit(Seq("wf/n", 5, 2, {{"wf/missing", 40, true}}));
  EXPECT_TRUE(st.IsFailedPrecondition()) << st;
  EXPECT_NE(st.message().find("wf/missing"), std::string::npos) << st;
  st = h.engine.Admit(Seq("wf/n", 5, 2, {{"wf/a", 11, true}}));  // holds only 10
  EXPECT_TRUE(st.IsFailedPrecondition()) << st;
  // In use: neither released nor resized.
  ASSERT_TRUE(h.engine.Admit(Seq("wf/n", 5, 2, {{"wf/a", 10, true}})).ok());
  EXPECT_TRUE(h.engine.Release("wf/a").IsFailedPrecondition());
  EXPECT_TRUE(h.engine.Import("wf/a", 100).IsFailedPrecondition());
  h.loop.Run();
  EXPECT_EQ(h.engine.context_tokens("wf/a"), 17);
  ASSERT_TRUE(h.engine.Release("wf/a").ok());
  EXPECT_EQ(h.engine.blocks_used(), 0);
  EXPECT_EQ(h.engine.contexts_held(), 0u);
}

// keep_only: a sequence that continues its context from a prefix drops the rest of the
// context's blocks at admission (the pool frees them), prefills only its own tokens, and
// grows the context from the kept prefix. A kept length at or above what is held changes
// nothing; a context another running sequence reads is not cut; only the extended
// primary may be cut.
TEST(SimulatedEngine, KeepOnlyCutsTheContextToItsPrefixAtAdmission) {
  SimulatedHarness h(Limits(8192, 20));
  ASSERT_TRUE(h.engine.Import("wf/c", 100).ok());  // 7 blocks
  EXPECT_EQ(h.engine.blocks_used(), 7);
  SeqContext cut{"wf/c", 40, true};
  cut.keep_only = true;
  ASSERT_TRUE(h.engine.Admit(Seq("wf/n", 5, 2, {cut})).ok());
  EXPECT_EQ(h.engine.context_tokens("wf/c"), 45);  // 40 kept + 5 new
  EXPECT_EQ(h.engine.blocks_used(), 3);
  h.loop.Run();
  EXPECT_EQ(h.engine.context_tokens("wf/c"), 47);  // + the 2 output tokens
  ASSERT_FALSE(h.reports.empty());
  EXPECT_EQ(h.reports.front().prefill_tokens, 5);
  // Kept length >= held: nothing dropped.
  SeqContext whole{"wf/c", 47, true};
  whole.keep_only = true;
  ASSERT_TRUE(h.engine.Admit(Seq("wf/m", 1, 1, {whole})).ok());
  h.loop.Run();
  EXPECT_EQ(h.engine.context_tokens("wf/c"), 49);
  // A reader holds it: not cut.
  SequenceSpec reader = Seq("wf/r", 50, 5, {{"wf/c", 49, true}});
  reader.extends_primary = false;
  ASSERT_TRUE(h.engine.Admit(reader).ok());
  SeqContext cut2{"wf/c", 10, true};
  cut2.keep_only = true;
  Status st = h.engine.Admit(Seq("wf/x", 5, 2, {cut2}));
  EXPECT_TRUE(st.IsFailedPrecondition()) << st;
  EXPECT_NE(st.message().find("running sequence reads it"), std::string::npos) << st;
  // Only the extended primary.
  SequenceSpec bad = Seq("wf/y", 5, 2, {{"wf/d", 0, false}, cut2});
  EXPECT_TRUE(h.engine.Admit(bad).IsInvalidArgument());
}

TEST(SimulatedEngine, RejectsBadSpecs) {
  SimulatedHarness h(Limits(8192, 100));
  EXPECT_TRUE(h.engine.Admit(Seq("", 5, 2)).IsInvalidArgument());
  EXPECT_TRUE(h.engine.Admit(Seq("wf/a", -1, 2)).IsInvalidArgument());
  EXPECT_TRUE(h.engine.Admit(Seq("wf/a", 5, 0)).IsInvalidArgument());
  SequenceSpec done = Seq("wf/a", 5, 2);
  done.output_done = 2;
  EXPECT_TRUE(h.engine.Admit(done).IsInvalidArgument());
  EXPECT_TRUE(h.engine.Admit(Seq("wf/a", 5, 2, {{"wf/c", 0, false}, {"wf/c", 0, false}}))
                  .IsInvalidArgument());
  EXPECT_TRUE(h.engine.Admit(Seq("wf/a", 5, 2, {{"wf/c", 10, false}})).IsInvalidArgument());
  ASSERT_TRUE(h.engine.Admit(Seq("wf/a", 5, 2, {{"wf/c", 0, false}})).ok());
  EXPECT_EQ(h.engine.Admit(Seq("wf/a", 5, 2)).code(), StatusCode::kAlreadyExists);
  // Two running sequences may not extend one context.
  EXPECT_TRUE(h.engine.Admit(Seq("wf/b", 5, 2, {{"wf/c", 5, true}})).IsFailedPrecondition());
  SequenceSpec reader = Seq("wf/b", 5, 2, {{"wf/c", 5, true}});
  reader.extends_primary = false;  // reading it is fine; its own tokens are private
  ASSERT_TRUE(h.engine.Admit(reader).ok());
  EXPECT_EQ(h.engine.context_tokens("wf/b"), 5);
  EXPECT_TRUE(h.engine.Preempt("wf/zzz").status().IsNotFound());
  h.loop.Run();
  EXPECT_EQ(h.engine.context_tokens("wf/b"), -1);
  EXPECT_EQ(h.engine.context_tokens("wf/c"), 7);
}

TEST(SimulatedEngine, FaultFunctionFailsSequencesAtTheirEnd) {
  SimulatedEngine::Options o;
  o.fault = [](const std::string& key) {
    return key == "wf/bad" ? Status::Unavailable("injected") : Status::OK();
  };
  SimulatedHarness h(Limits(8192, 100), nullptr, o);
  ASSERT_TRUE(h.engine.Admit(Seq("wf/bad", 5, 3)).ok());
  ASSERT_TRUE(h.engine.Admit(Seq("wf/good", 5, 3)).ok());
  h.loop.Run();
  SeqProgress bad = h.ProgressOf("wf/bad").back(), good = h.ProgressOf("wf/good").back();
  EXPECT_TRUE(bad.finished);
  EXPECT_TRUE(bad.status.IsUnavailable());
  EXPECT_TRUE(good.finished);
  EXPECT_TRUE(good.status.ok());
  for (size_t i = 0; i + 1 < h.ProgressOf("wf/bad").size(); ++i)
    EXPECT_TRUE(h.ProgressOf("wf/bad")[i].status.ok());
}

// A busy mixed scenario: arrivals over time (a refused admission retries 10 ms later), the
// context of every other finished sequence released, and vLLM-style victims (the most
// recently admitted exhausted sequence: preempted, its context released) from the listener.
void Arrive(SimulatedHarness& h, std::set<std::string>* keys, int i, int tries_left) {
  std::string wf = "wf" + std::to_string(i % 4);
  std::string ctx = wf + "/ctx", key = wf + "/n" + std::to_string(i);
  keys->insert(ctx);
  keys->insert(key);
  bool have = h.engine.context_tokens(ctx) >= 0;
  SequenceSpec s = Seq(key, 100 + 23 * i, 30 + 5 * (i % 4),
                       {{ctx, have ? h.engine.context_tokens(ctx) : 0, have}});
  if (have) s.prefill_tokens = 40 + 7 * i;
  s.actual_output_tokens = i % 3 == 0 ? 9 : 0;
  s.extends_primary = i % 5 != 4;
  if (!h.engine.Admit(s).ok() && tries_left > 0)
    h.loop.PostAfter(Millis(10),
                     [&h, keys, i, tries_left]() { Arrive(h, keys, i, tries_left - 1); });
}

void RunScenario(SimulatedHarness& h, std::set<std::string>* keys) {
  for (int i = 0; i < 16; ++i)
    h.loop.PostAt(Time{0} + Millis(5 * i), [&h, keys, i]() { Arrive(h, keys, i, 40); });
  h.on_report = [&h, keys](const StepReport& r) {
    int64_t sum = 0;
    for (const std::string& k : *keys)
      if (h.engine.context_tokens(k) >= 0)
        sum += BlocksFor(h.engine.context_tokens(k), h.engine.limits().block_tokens);
    EXPECT_EQ(r.blocks_used, sum);
    EXPECT_EQ(h.engine.blocks_used(), sum);
    EXPECT_LE(r.blocks_used, r.blocks_total);
    auto context_of = [](const std::string& key) { return key.substr(0, key.find('/')) + "/ctx"; };
    for (const SeqProgress& p : r.seqs)
      if (p.finished && std::stoi(p.key.substr(p.key.find("/n") + 2)) % 2 == 0)
        (void)h.engine.Release(context_of(p.key));
    if (!r.exhausted.empty()) {
      const std::string victim = r.exhausted.back();
      (void)h.engine.Preempt(victim);
      (void)h.engine.Release(context_of(victim));
    }
  };
  h.loop.Run();
}

std::string Render(const std::vector<StepReport>& reports) {
  std::ostringstream o;
  for (const StepReport& r : reports) {
    o << r.worker << " " << r.start.ns << "-" << r.end.ns << " p" << r.prefill_tokens << " d"
      << r.decode_seqs << " kv" << r.kv_tokens_read << " b" << r.blocks_used << "/"
      << r.blocks_total << " [";
    for (const SeqProgress& p : r.seqs)
      o << p.key << ":" << p.prefill_done << "," << p.output_done << (p.finished ? "F" : "")
        << (p.status.ok() ? "" : "!") << " ";
    o << "] x[";
    for (const std::string& e : r.exhausted) o << e << " ";
    o << "]\n";
  }
  return o.str();
}

TEST(SimulatedEngine, BlocksUsedMatchesContextsAtEveryStep) {
  SimulatedHarness h(Limits(256, 60, 8));
  std::set<std::string> keys;
  RunScenario(h, &keys);
  EXPECT_GT(h.reports.size(), 100u) << Render(h.reports);
  bool exhausted = false;
  for (const StepReport& r : h.reports) exhausted |= !r.exhausted.empty();
  EXPECT_TRUE(exhausted);  // the pool is small enough to exercise exhaustion
  EXPECT_EQ(h.engine.running(), 0u);
}

TEST(SimulatedEngine, DeterministicReports) {
  std::string first, second;
  for (std::string* out : {&first, &second}) {
    SimulatedHarness h(Limits(256, 60, 8));
    std::set<std::string> keys;
    RunScenario(h, &keys);
    *out = Render(h.reports);
  }
  EXPECT_FALSE(first.empty());
  EXPECT_EQ(first, second);
}

}  // namespace
}  // namespace switchyard::executors
