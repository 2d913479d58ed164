// vLLM's KV cache events: batches in both of vLLM's msgpack forms (arrays up to 0.10, maps
// after; integer and digest block hashes), the prefix index they build, and the ZeroMQ
// subscription with its sequence check, against a publisher speaking vLLM's wire format
// (topic, 8-byte big-endian sequence, msgpack batch).
#include <gtest/gtest.h>

#include <msgpack.hpp>

#include <numeric>
#include <string>
#include <vector>

#include "tests/common/wait_until.h"
#include "tests/upstream/kv_event_publisher.h"
#include "upstream/kv_event_subscriber.h"
#include "upstream/kv_events.h"

namespace switchyard::upstream {
namespace {

using Packer = msgpack::packer<msgpack::sbuffer>;
using testing::Digest;
using testing::MapBatch;
using testing::Publisher;

std::vector<int32_t> Tokens(int first, int n) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), first);
  return t;
}

// vLLM <= 0.10: [ts, [event...], rank]; BlockStored = [tag, hashes, parent, tokens, size,
// lora_id, medium] with integer hashes.
void PackStoredArray(Packer& p, std::vector<uint64_t> hashes, const uint64_t* parent,
                     const std::vector<int32_t>& tokens, const char* medium) {
  p.pack_array(7);
  p.pack(std::string("BlockStored"));
  p.pack(hashes);
  if (parent)
    p.pack(*parent);
  else
    p.pack_nil();
  p.pack(tokens);
  p.pack(16);
  p.pack_nil();
  p.pack(std::string(medium));
}

std::string ArrayBatch() {
  msgpack::sbuffer buf;
  Packer p(buf);
  p.pack_array(3);
  p.pack(1733500000.25);
  p.pack_array(4);
  PackStoredArray(p, {11, 12}, nullptr, Tokens(100, 32), "GPU");
  const uint64_t parent = 12;
  PackStoredArray(p, {13}, &parent, Tokens(132, 16), "GPU");
  p.pack_array(3);
  p.pack(std::string("BlockRemoved"));
  p.pack(std::vector<uint64_t>{13});
  p.pack(std::string("GPU"));
  p.pack_array(1);
  p.pack(std::string("SomeFutureEvent"));
  p.pack(0);
  return std::string(buf.data(), buf.size());
}

TEST(KvEvents, TheArrayFormDecodesAndUnknownEventsAreSkipped) {
  auto b = DecodeKvEventBatch(ArrayBatch());
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_DOUBLE_EQ(b->ts, 1733500000.25);
  EXPECT_EQ(b->data_parallel_rank, 0);
  ASSERT_EQ(b->events.size(), 3u) << "the unknown event is skipped";
  EXPECT_EQ(b->events[0].kind, KvEvent::Kind::kStored);
  EXPECT_EQ(b->events[0].block_hashes, (std::vector<std::string>{"#11", "#12"}));
  EXPECT_EQ(b->events[0].parent, "");
  EXPECT_EQ(b->events[0].token_ids.size(), 32u);
  EXPECT_EQ(b->events[1].parent, "#12");
  EXPECT_EQ(b->events[2].kind, KvEvent::Kind::kRemoved);
  EXPECT_EQ(b->events[2].medium, "GPU");
}

TEST(KvEvents, TheMapFormWithDigestHashesDecodes) {
  const std::string parent = Digest('a');
  auto b = DecodeKvEventBatch(MapBatch({Digest('b')}, &parent, Tokens(0, 16), "CPU"));
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  ASSERT_EQ(b->events.size(), 1u);
  EXPECT_EQ(b->events[0].block_hashes[0], Digest('b'));
  EXPECT_EQ(b->events[0].parent, Digest('a'));
  EXPECT_EQ(b->events[0].block_size, 16);
  EXPECT_EQ(b->events[0].medium, "CPU");
}

TEST(KvEvents, WhatIsNotABatchIsNamed) {
  EXPECT_EQ(DecodeKvEventBatch(std::string("\xc1", 1))
                .status()
                .message()
                .rfind("KV event batch is not msgpack", 0),
            0u);
  // 20 token ids for one block of 16.
  auto b = DecodeKvEventBatch(MapBatch({Digest('b')}, nullptr, Tokens(0, 20)));
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().message(), "event 0: BlockStored: 20 token ids for 1 blocks of 16");
  msgpack::sbuffer buf;
  Packer p(buf);
  p.pack_map(1);
  p.pack(std::string("ts"));
  p.pack(1.0);
  EXPECT_EQ(DecodeKvEventBatch(std::string(buf.data(), buf.size())).status().message(),
            "KV event batch has no events list");
}

TEST(KvBlockIndex, APromptMatchesTheLeadingBlocksTheEngineHolds) {
  KvBlockIndex index;
  auto b = DecodeKvEventBatch(ArrayBatch());
  ASSERT_TRUE(b.ok());
  // Blocks 11, 12 (tokens 100..131) stored; 13 (132..147) stored, then removed.
  for (const KvEvent& e : b->events) index.Apply(e);
  EXPECT_EQ(index.blocks(), 2u);
  std::vector<int32_t> prompt = Tokens(100, 60);  // three whole blocks and 12 tokens
  EXPECT_EQ(index.HeldPrefixTokens(prompt), 32);
  prompt[20] = 7;  // the second block differs: only the first is reused
  EXPECT_EQ(index.HeldPrefixTokens(prompt), 16);
  EXPECT_EQ(index.HeldPrefixTokens(Tokens(100, 15)), 0) << "no whole block";
  // A block whose parent was never seen cannot be chained.
  const std::string unknown = Digest('z');
  auto orphan = DecodeKvEventBatch(MapBatch({Digest('y')}, &unknown, Tokens(500, 16)));
  index.Apply(orphan->events[0]);
  EXPECT_EQ(index.unchained(), 1u);
  EXPECT_EQ(index.blocks(), 2u);
  // The CPU tier is its own medium; a cleared cache holds nothing.
  const KvEvent cleared{.kind = KvEvent::Kind::kCleared};
  index.Apply(cleared);
  EXPECT_EQ(index.HeldPrefixTokens(Tokens(100, 32)), 0);
  auto cpu = DecodeKvEventBatch(MapBatch({Digest('c')}, nullptr, Tokens(100, 16), "CPU"));
  index.Apply(cpu->events[0]);
  EXPECT_EQ(index.HeldPrefixTokens(Tokens(100, 32), "CPU"), 16);
  EXPECT_EQ(index.HeldPrefixTokens(Tokens(100, 32), "GPU"), 0);
}

TEST(KvEventSubscriber, FollowsThePublisherAndClearsItsIndexOnASequenceGap) {
  Publisher pub;
  auto sub = KvEventSubscriber::Start({"", pub.endpoint()});
  ASSERT_TRUE(sub.ok()) << sub.status().ToString();
  pub.WaitForSubscriber();
  auto batches = [&] { return (*sub)->figures()[1].batches; };
  const std::string first = Digest('1');
  pub.Send(0, MapBatch({first}, nullptr, Tokens(0, 16)));
  pub.Send(1, MapBatch({Digest('2')}, &first, Tokens(16, 16)));
  ASSERT_TRUE(switchyard::testing::WaitUntil([&] { return batches() == 2; }));
  EXPECT_EQ((*sub)->HeldPrefixTokens(1, Tokens(0, 40)), 32);
  EXPECT_EQ((*sub)->HeldPrefixTokens(0, Tokens(0, 40)), 0) << "upstream 0 publishes nothing";
  auto f = (*sub)->figures()[1];
  EXPECT_EQ(f.endpoint, pub.endpoint());
  EXPECT_EQ(f.gpu_blocks, 2u);
  // Sequence 2 never comes: whatever it removed is unknown, so the index starts over.
  pub.Send(3, MapBatch({Digest('3')}, nullptr, Tokens(900, 16)));
  ASSERT_TRUE(switchyard::testing::WaitUntil([&] { return batches() == 3; }));
  f = (*sub)->figures()[1];
  EXPECT_EQ(f.gaps, 1u);
  EXPECT_EQ(f.gpu_blocks, 1u);
  EXPECT_EQ((*sub)->HeldPrefixTokens(1, Tokens(0, 40)), 0);
  EXPECT_EQ((*sub)->HeldPrefixTokens(1, Tokens(900, 16)), 16);
  // A message that is not vLLM's three frames is counted and named.
  pub.SendFrames({"", "x"});
  ASSERT_TRUE(switchyard::testing::WaitUntil([&] { return (*sub)->figures()[1].bad == 1; }));
  EXPECT_EQ((*sub)->figures()[1].error,
            "a message of 2 frames (topic, 8-byte sequence, batch expected)");
}

TEST(KvEventSubscriber, AnEndpointZeroMqRefusesIsNamed) {
  auto sub = KvEventSubscriber::Start({"nonsense://x"});
  ASSERT_FALSE(sub.ok());
  EXPECT_EQ(sub.status().message().rfind("KV events endpoint 'nonsense://x': ", 0), 0u)
      << sub.status().ToString();
}

}  // namespace
}  // namespace switchyard::upstream
