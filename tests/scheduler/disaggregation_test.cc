// Tests of ChoosePrefill (scheduler/disaggregation.h): the router's choice on small
// scenarios with Llama-3.1-8B figures (128 KiB of BF16 KV per token, 30k prefill tokens/s
// per worker, 25 ms decode steps, a 400 Gb/s link): a fresh long prompt goes to a prefill
// worker, an append to a resident context stays, and a congested link, a busy prefill
// worker or a full decode worker flips the choice.
#include "scheduler/disaggregation.h"

#include <gtest/gtest.h>

namespace switchyard::scheduler {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

PdModel Llama8b() {
  PdModel m;
  m.kv_bytes_per_token = 131072;
  m.prefill_tokens_per_s = 30000;
  m.decode_step = milliseconds(25);
  return m;
}

// A decode worker running a batch of 32, with room for 1M tokens.
DecodeCandidate Decoder(int worker, int64_t resident = 0) {
  DecodeCandidate d;
  d.worker = worker;
  d.resident_tokens = resident;
  d.decoding = 32;
  d.kv_free_bytes = 1'000'000ull * 131072;
  return d;
}

// An idle prefill worker with a 50 GB/s link to each of `n` decode candidates.
PrefillCandidate Prefiller(int worker, size_t n = 1) {
  PrefillCandidate p;
  p.worker = worker;
  p.link_queue.assign(n, Duration{0});
  p.link_bytes_per_s.assign(n, 50e9);
  return p;
}

double SecondsOf(Duration d) { return std::chrono::duration<double>(d).count(); }

TEST(ChoosePrefill, AFreshLongPromptGoesToAPrefillWorker) {
  const PdCall call{30000, 200};
  PrefillChoice c =
      ChoosePrefill(call, {Decoder(1)}, {Prefiller(0)}, Llama8b(), Disaggregation::kAuto);
  EXPECT_TRUE(c.disaggregate) << c.why;
  EXPECT_EQ(c.prefill_worker, 0);
  EXPECT_EQ(c.decode_worker, 1);
  EXPECT_EQ(c.move_bytes, 30000ull * 131072);
  // Colocated: 1 s of prefill stalls 32 decoding sequences (32 s of their time) + 5 s of
  // decode; disaggregated: the 79 ms move hides behind the 1 s prefill.
  EXPECT_NEAR(SecondsOf(c.colocated), 1 + 5 + 32, 1e-6);
  EXPECT_NEAR(SecondsOf(c.disaggregated), 1 + 5, 1e-6);
}

TEST(ChoosePrefill, AnAppendToAResidentContextStays) {
  const PdCall call{48400, 200};  // 400 new tokens after a 48k context on worker 1
  PrefillChoice c =
      ChoosePrefill(call, {Decoder(1, 48000)}, {Prefiller(0)}, Llama8b(), Disaggregation::kAuto);
  EXPECT_FALSE(c.disaggregate) << c.why;
  EXPECT_EQ(c.decode_worker, 1);
  EXPECT_EQ(c.prefill_worker, -1);
  EXPECT_LT(c.colocated, c.disaggregated);  // the prefill worker would recompute 48,400
}

TEST(ChoosePrefill, ACongestedLinkOrABusyPrefillWorkerKeepsItColocated) {
  const PdCall call{30000, 200};
  PrefillCandidate congested = Prefiller(0);
  congested.link_queue[0] = seconds(40);
  PrefillChoice c =
      ChoosePrefill(call, {Decoder(1)}, {congested}, Llama8b(), Disaggregation::kAuto);
  EXPECT_FALSE(c.disaggregate) << c.why;
  EXPECT_NEAR(SecondsOf(c.disaggregated), 1 + 40 + 5, 1e-6);

  PrefillCandidate busy = Prefiller(0);
  busy.wait = seconds(35);
  c = ChoosePrefill(call, {Decoder(1)}, {busy}, Llama8b(), Disaggregation::kAuto);
  EXPECT_FALSE(c.disaggregate) << c.why;
  // The control: a second, idle prefill worker takes it again.
  c = ChoosePrefill(call, {Decoder(1)}, {busy, Prefiller(2)}, Llama8b(), Disaggregation::kAuto);
  EXPECT_TRUE(c.disaggregate) << c.why;
  EXPECT_EQ(c.prefill_worker, 2);
}

TEST(ChoosePrefill, AFullDecodeWorkerSendsTheAppendToAPrefillWorker) {
  const PdCall call{48400, 200};
  DecodeCandidate home = Decoder(1, 48000), other = Decoder(2);
  home.kv_free_bytes = 100ull * 131072;  // cannot take 600 more tokens
  PrefillChoice c =
      ChoosePrefill(call, {home, other}, {Prefiller(0, 2)}, Llama8b(), Disaggregation::kAuto);
  EXPECT_TRUE(c.disaggregate) << c.why;
  EXPECT_EQ(c.decode_worker, 2);
  EXPECT_EQ(c.move_bytes, 48400ull * 131072);  // worker 2 holds none of it
}

TEST(ChoosePrefill, ModesAndTheMoveThatIsNotHidden) {
  const PdCall fresh{30000, 200}, append{48400, 200};
  PrefillChoice c =
      ChoosePrefill(fresh, {Decoder(1)}, {Prefiller(0)}, Llama8b(), Disaggregation::kColocated);
  EXPECT_FALSE(c.disaggregate);
  EXPECT_EQ(c.disaggregated, Duration::max());  // not estimated
  c = ChoosePrefill(append, {Decoder(1, 48000)}, {Prefiller(0)}, Llama8b(),
                    Disaggregation::kAlways);
  EXPECT_TRUE(c.disaggregate) << c.why;
  EXPECT_EQ(c.move_bytes, 400ull * 131072);  // worker 1 holds the first 48,000
  c = ChoosePrefill(fresh, {Decoder(1)}, {}, Llama8b(), Disaggregation::kAlways);
  EXPECT_FALSE(c.disaggregate);  // no prefill worker
  EXPECT_EQ(c.decode_worker, 1);

  PdModel after_last_layer = Llama8b();
  after_last_layer.streaming_overlap = 0;  // the move starts once the prefill ended
  c = ChoosePrefill(fresh, {Decoder(1)}, {Prefiller(0)}, after_last_layer, Disaggregation::kAuto);
  EXPECT_NEAR(SecondsOf(c.disaggregated), 1 + 30000.0 * 131072 / 50e9 + 5, 1e-6);

  DecodeCandidate tiny = Decoder(1);
  tiny.kv_free_bytes = 0;
  c = ChoosePrefill(fresh, {tiny}, {Prefiller(0)}, Llama8b(), Disaggregation::kAuto);
  EXPECT_EQ(c.decode_worker, -1);  // nowhere to decode
  EXPECT_FALSE(c.disaggregate);
}

// A worker is never paired with itself (that is the colocated choice), and a prefill
// worker that decodes calls of its own pays their stall as a decode worker does.
TEST(ChoosePrefill, NoHandOffToItselfAndAPrefillWorkersOwnDecodesCount) {
  const PdCall fresh{30000, 200};
  DecodeCandidate busy_self = Decoder(0);
  auto c = ChoosePrefill(fresh, {busy_self}, {Prefiller(0)}, Llama8b(), Disaggregation::kAlways);
  EXPECT_FALSE(c.disaggregate);
  EXPECT_EQ(c.decode_worker, 0);
  PrefillCandidate decoding = Prefiller(0);
  decoding.decoding = 64;  // more than the decode worker's 32
  c = ChoosePrefill(fresh, {Decoder(1)}, {decoding}, Llama8b(), Disaggregation::kAuto);
  EXPECT_FALSE(c.disaggregate) << c.why;
  c = ChoosePrefill(fresh, {Decoder(1)}, {Prefiller(0)}, Llama8b(), Disaggregation::kAuto);
  EXPECT_TRUE(c.disaggregate) << c.why;  // the same prefill worker, idle
}

}  // namespace
}  // namespace switchyard::scheduler
