#include "kv_tiers/disk_tier.h"

#include <gtest/gtest.h>

#include "kv_tiers/prefix_hash.h"
#include "test_util.h"

namespace switchyard::kv_tiers {
namespace {

TEST(DiskTier, BatchedWritesAndReads) {
  TierOptions o = testing::Opts(64);
  o.path = testing::TempDir("batch");
  auto tier = DiskTier::Open(o);
  ASSERT_TRUE(tier.ok()) << tier.status();
  std::vector<Extent> ext;
  std::vector<std::vector<char>> data;
  std::vector<BlockWrite> writes;
  for (int i = 0; i < 8; ++i) {
    ext.push_back((*tier)->Allocate("t", 4096).value());
    data.push_back(testing::Pattern(4096, i));
  }
  for (int i = 0; i < 8; ++i) writes.push_back({ext[i], data[i].data(), 4096});
  ASSERT_TRUE((*tier)->Write(writes).ok());
  std::vector<std::vector<char>> out(8, std::vector<char>(4096));
  std::vector<BlockRead> reads;
  for (int i = 0; i < 8; ++i) reads.push_back({ext[i], out[i].data(), 4096});
  ASSERT_TRUE((*tier)->Read(reads).ok());
  EXPECT_EQ(out, data);
}

// Flushed data (as after a restart) reads back whole, with the default tuning (values in
// the LSM) and with BlobDB (values >= 64 KiB in blob files).
TEST(DiskTier, ReadsFlushedBlocksWithAndWithoutBlobFiles) {
  for (bool blobs : {false, true}) {
    SCOPED_TRACE(blobs ? "blob files" : "LSM only");
    TierOptions o = testing::Opts(64, 256 << 10);
    o.path = testing::TempDir(blobs ? "flushed_blob" : "flushed_lsm");
    DiskTierTuning tuning;
    tuning.use_blob_files = blobs;
    auto tier = DiskTier::Open(o, tuning).value();
    const std::vector<uint64_t> sizes = {4096, 64 << 10, 200 << 10, 100};
    std::vector<Extent> ext;
    std::vector<std::vector<char>> data;
    std::vector<BlockWrite> writes;
    for (size_t i = 0; i < sizes.size(); ++i) {
      ext.push_back(tier->Allocate("t", sizes[i]).value());
      data.push_back(testing::Pattern(sizes[i], static_cast<uint32_t>(i) + 3));
    }
    for (size_t i = 0; i < sizes.size(); ++i) writes.push_back({ext[i], data[i].data(), sizes[i]});
    ASSERT_TRUE(tier->Write(writes).ok());
    ASSERT_TRUE(tier->Flush().ok());
    std::vector<std::vector<char>> out;
    std::vector<BlockRead> reads;
    for (size_t i = 0; i < sizes.size(); ++i) out.emplace_back(sizes[i], 0);
    for (size_t i = 0; i < sizes.size(); ++i) reads.push_back({ext[i], out[i].data(), sizes[i]});
    ASSERT_TRUE(tier->Read(reads).ok());
    EXPECT_EQ(out, data);
    // Reading more bytes than the slot holds is refused before RocksDB is asked.
    BlockRead too_big{ext[3], out[2].data(), 200};
    EXPECT_TRUE(tier->Read(std::span<const BlockRead>(&too_big, 1)).IsInvalidArgument());
    ASSERT_TRUE(tier->Close().ok());
    EXPECT_TRUE(tier->Flush().IsUnavailable());
  }
}

TEST(DiskTier, ReadOfUnwrittenSlotIsDataLoss) {
  TierOptions o = testing::Opts(4);
  o.path = testing::TempDir("unwritten");
  auto tier = DiskTier::Open(o).value();
  Extent e = tier->Allocate("t", 4096).value();
  std::vector<char> out(4096);
  BlockRead r{e, out.data(), 4096};
  EXPECT_TRUE(tier->Read(std::span<const BlockRead>(&r, 1)).IsDataLoss());
  EXPECT_TRUE(DiskTier::Open(TierOptions{}).status().IsInvalidArgument());
}

// A read looks up exactly its own key: a slot never written between written ones is
// DataLoss (not its neighbour's bytes), in the memtable and in flushed files; a value
// shorter than the read is DataLoss; a rewritten slot reads its latest bytes.
TEST(DiskTier, ReadsOnlyTheirOwnKey) {
  TierOptions o = testing::Opts(8);
  o.path = testing::TempDir("own_key");
  auto tier = DiskTier::Open(o).value();
  std::vector<Extent> ext;
  for (int i = 0; i < 4; ++i) ext.push_back(tier->Allocate("t", 4096).value());
  const auto a = testing::Pattern(4096, 1), c = testing::Pattern(4096, 2);
  const auto c2 = testing::Pattern(4096, 3), short_value = testing::Pattern(100, 4);
  std::vector<BlockWrite> writes = {
      {ext[0], a.data(), 4096}, {ext[2], c.data(), 4096}, {ext[3], short_value.data(), 100}};
  ASSERT_TRUE(tier->Write(writes).ok());
  BlockWrite rewrite{ext[2], c2.data(), 4096};
  ASSERT_TRUE(tier->Write(std::span<const BlockWrite>(&rewrite, 1)).ok());
  for (bool flushed : {false, true}) {
    SCOPED_TRACE(flushed ? "flushed" : "memtable");
    if (flushed) {
      ASSERT_TRUE(tier->Flush().ok());
    }
    std::vector<char> out(4096);
    BlockRead hole{ext[1], out.data(), 4096};
    EXPECT_TRUE(tier->Read(std::span<const BlockRead>(&hole, 1)).IsDataLoss());
    BlockRead too_short{ext[3], out.data(), 4096};
    EXPECT_TRUE(tier->Read(std::span<const BlockRead>(&too_short, 1)).IsDataLoss());
    std::vector<std::vector<char>> got(2, std::vector<char>(4096));
    std::vector<BlockRead> reads = {{ext[0], got[0].data(), 4096}, {ext[2], got[1].data(), 4096}};
    ASSERT_TRUE(tier->Read(reads).ok());
    EXPECT_EQ(got[0], a);
    EXPECT_EQ(got[1], c2);
  }
}

// WaitIdle returns once the flush and any compaction it caused have ended; Unavailable
// once closed.
TEST(DiskTier, WaitIdleAfterFlushes) {
  TierOptions o = testing::Opts(64);
  o.path = testing::TempDir("wait_idle");
  auto tier = DiskTier::Open(o).value();
  const auto data = testing::Pattern(64 << 10, 5);
  Extent e = tier->Allocate("t", data.size()).value();
  for (int i = 0; i < 6; ++i) {  // more L0 files than the compaction trigger (4)
    BlockWrite w{e, data.data(), data.size()};
    ASSERT_TRUE(tier->Write(std::span<const BlockWrite>(&w, 1)).ok());
    ASSERT_TRUE(tier->Flush().ok());
  }
  ASSERT_TRUE(tier->WaitIdle().ok());
  std::vector<char> out(data.size());
  BlockRead r{e, out.data(), out.size()};
  ASSERT_TRUE(tier->Read(std::span<const BlockRead>(&r, 1)).ok());
  EXPECT_EQ(out, data);
  ASSERT_TRUE(tier->Close().ok());
  EXPECT_TRUE(tier->WaitIdle().IsUnavailable());
}

TEST(DiskTier, MetadataSurvivesReopenAndSlotsAreNotReused) {
  TierOptions o = testing::Opts(16);
  o.path = testing::TempDir("reopen");
  Extent e;
  auto data = testing::Pattern(4096, 9);
  {
    auto tier = DiskTier::Open(o).value();
    e = tier->Allocate("t", 4096).value();
    BlockWrite w{e, data.data(), 4096};
    ASSERT_TRUE(tier->Write(std::span<const BlockWrite>(&w, 1)).ok());
    v1::KvBlockMeta meta;
    meta.set_tenant("t");
    meta.set_bytes(4096);
    meta.set_checksum(BlockChecksum(data.data(), data.size()));
    ASSERT_TRUE(tier->PersistMeta(e, meta).ok());
    ASSERT_TRUE(tier->Close().ok());
    EXPECT_TRUE(tier->Allocate("t", 4096).ok());                         // accounting only
    EXPECT_FALSE(tier->Write(std::span<const BlockWrite>(&w, 1)).ok());  // closed
  }
  auto tier = DiskTier::Open(o).value();
  auto found = tier->Recover();
  ASSERT_TRUE(found.ok()) << found.status();
  ASSERT_EQ(found->size(), 1u);
  EXPECT_EQ((*found)[0].first.slot, e.slot);
  EXPECT_EQ(tier->tenant_used_bytes("t"), 4096u);
  Extent fresh = tier->Allocate("t", 4096).value();
  EXPECT_GT(fresh.slot, e.slot);
}

}  // namespace
}  // namespace switchyard::kv_tiers
