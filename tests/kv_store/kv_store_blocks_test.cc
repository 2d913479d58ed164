#include "kv_store/kv_store_blocks.h"

#include <gtest/gtest.h>

#include <cstring>

namespace switchyard::kv_store {
namespace {

constexpr uint64_t kEpoch = 77;

struct Put {
  BlockHeader h;
  SharedBuffer data;
};

Put MakePut(std::vector<uint64_t> ids, uint64_t generation, uint8_t fill = 1,
            std::string owner = "wf") {
  Put p;
  p.h.communicator_epoch = kEpoch;
  p.h.model_epoch = 0;
  p.h.generation = generation;
  p.h.workflow_id = owner;
  p.h.context_id = "ctx";
  for (uint64_t id : ids) p.h.blocks.push_back({id, 64, 0});
  p.h.length = 64 * ids.size();
  p.data = std::make_shared<ByteBuffer>(p.h.length);
  std::memset(p.data->data.get(), fill, p.h.length);
  for (auto& b : p.h.blocks) b.checksum = ChecksumOf(p.data->data.get(), 64);
  return p;
}

RejectReason Commit(KvStoreBlocks& s, const Put& p, uint64_t received = 0) {
  EXPECT_TRUE(s.Reserve(p.h.length));
  bool validated = false;
  return s.ValidateAndCommit(p.h, p.data, received ? received : p.h.length, &validated);
}

TEST(KvStoreBlocksTest, CommitsAndServesAValidPut) {
  KvStoreBlocks s(1 << 20, kEpoch);
  EXPECT_EQ(Commit(s, MakePut({1, 2}, 1, 9)), RejectReason::kNone);
  EXPECT_EQ(s.block_count(), 2u);
  EXPECT_EQ(s.committed_bytes(), 128u);
  EXPECT_EQ(s.used_bytes(), 128u);  // the reservation became committed bytes
  GetRequest g{1, kEpoch, 0, 1, 0, 0, "wf", "ctx", {2, 1}};
  std::vector<StoredBlock> out;
  ASSERT_EQ(s.Lookup(g, &out), RejectReason::kNone);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].block_id, 2u);
  EXPECT_EQ(out[0].data()[0], 9);
}

TEST(KvStoreBlocksTest, RejectsBadChecksumShortLengthAndStaleEpochs) {
  KvStoreBlocks s(1 << 20, kEpoch);
  Put bad = MakePut({1}, 1);
  bad.data->data[3] ^= 0xff;
  bool validated = true;
  ASSERT_TRUE(s.Reserve(64));
  EXPECT_EQ(s.ValidateAndCommit(bad.h, bad.data, 64, &validated), RejectReason::kBadChecksum);
  EXPECT_FALSE(validated);
  EXPECT_EQ(Commit(s, MakePut({1}, 1), 32), RejectReason::kShortLength);
  Put stale = MakePut({1}, 1);
  stale.h.communicator_epoch = kEpoch + 1;
  EXPECT_EQ(Commit(s, stale), RejectReason::kStaleCommEpoch);
  s.SetModelEpoch(5);
  EXPECT_EQ(Commit(s, MakePut({1}, 1)), RejectReason::kStaleModelEpoch);
  EXPECT_EQ(s.block_count(), 0u);
  EXPECT_EQ(s.used_bytes(), 0u);  // every rejection released its reservation
}

// CommitChecked takes the length/checksum verdict from its caller (the worker hashes
// outside its store lock) and still checks identity against the table at commit time.
TEST(KvStoreBlocksTest, CommitCheckedTrustsTheVerdictButRechecksIdentity) {
  KvStoreBlocks s(1 << 20, kEpoch);
  bool validated = true;
  Put p = MakePut({1}, 1);
  ASSERT_TRUE(s.Reserve(64));
  EXPECT_EQ(s.CommitChecked(p.h, p.data, RejectReason::kBadChecksum, &validated),
            RejectReason::kBadChecksum);
  EXPECT_FALSE(validated);
  EXPECT_EQ(s.used_bytes(), 0u);
  ASSERT_TRUE(s.Reserve(64));
  EXPECT_EQ(s.CommitChecked(p.h, p.data, RejectReason::kNone, &validated), RejectReason::kNone);
  EXPECT_TRUE(validated);
  // A put checked while a newer generation committed: identity fails at commit time.
  Put newer = MakePut({1}, 3), older = MakePut({1}, 2);
  ASSERT_TRUE(s.Reserve(64));
  ASSERT_TRUE(s.Reserve(64));
  EXPECT_EQ(s.CommitChecked(newer.h, newer.data, RejectReason::kNone, &validated),
            RejectReason::kNone);
  EXPECT_EQ(s.CommitChecked(older.h, older.data, RejectReason::kNone, &validated),
            RejectReason::kStaleGeneration);
  EXPECT_FALSE(validated);
  EXPECT_EQ(s.Find(1)->generation, 3u);
  EXPECT_EQ(s.used_bytes(), 64u);  // one block committed, both reservations released
}

TEST(KvStoreBlocksTest, RejectsWrongOwnerAndStaleGeneration) {
  KvStoreBlocks s(1 << 20, kEpoch);
  ASSERT_EQ(Commit(s, MakePut({1}, 2, 1)), RejectReason::kNone);
  EXPECT_EQ(Commit(s, MakePut({1}, 3, 1, "intruder")), RejectReason::kWrongOwner);
  EXPECT_EQ(Commit(s, MakePut({1}, 2, 5)), RejectReason::kStaleGeneration);
  EXPECT_EQ(Commit(s, MakePut({1}, 1, 5)), RejectReason::kStaleGeneration);
  EXPECT_EQ(s.Find(1)->data()[0], 1);  // the committed block is untouched
  EXPECT_EQ(Commit(s, MakePut({1}, 3, 5)), RejectReason::kNone);  // a newer rewrite
  EXPECT_EQ(s.Find(1)->data()[0], 5);
  EXPECT_EQ(s.committed_bytes(), 64u);
  GetRequest g{1, kEpoch, 0, 2, 0, 0, "wf", "ctx", {1}};
  std::vector<StoredBlock> out;
  EXPECT_EQ(s.Lookup(g, &out), RejectReason::kStaleGeneration);  // old generation not served
  g.generation = 3;
  g.workflow_id = "other";
  EXPECT_EQ(s.Lookup(g, &out), RejectReason::kWrongOwner);
  g.workflow_id = "wf";
  g.block_ids = {42};
  EXPECT_EQ(s.Lookup(g, &out), RejectReason::kNotFound);
}

TEST(KvStoreBlocksTest, CapacityAndModelEpochChange) {
  KvStoreBlocks s(128, kEpoch);
  EXPECT_TRUE(s.Reserve(100));
  EXPECT_FALSE(s.Reserve(29));
  s.Unreserve(100);
  ASSERT_EQ(Commit(s, MakePut({1, 2}, 1)), RejectReason::kNone);
  EXPECT_FALSE(s.Reserve(1));
  EXPECT_EQ(s.SetModelEpoch(1), 2u);  // blocks of epoch 0 are invalidated
  EXPECT_EQ(s.block_count(), 0u);
  EXPECT_TRUE(s.Reserve(128));
}

}  // namespace
}  // namespace switchyard::kv_store
