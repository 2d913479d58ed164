#include "kv_tiers/disk_tier.h"

#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include "kv_tiers/disk_tier_options.h"
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

// The tier's RocksDB opened directly (the tier closed), to see what is stored on disk.
class RawDisk {
 public:
  explicit RawDisk(const std::string& path) {
    auto cache = rocksdb::NewLRUCache(1 << 20);
    std::vector<rocksdb::ColumnFamilyDescriptor> cfs = {
        {rocksdb::kDefaultColumnFamilyName, rocksdb::ColumnFamilyOptions()},
        {"kv_block_data", DiskTierDataCfOptions(DiskTierTuning{}, cache)},
        {"kv_block_meta", DiskTierMetaCfOptions(cache)},
    };
    rocksdb::DB* db = nullptr;
    status_ = rocksdb::DB::Open(DiskTierDbOptions(), path, cfs, &handles_, &db);
    db_.reset(db);
  }
  ~RawDisk() {
    for (auto* h : handles_) (void)db_->DestroyColumnFamilyHandle(h);
  }
  const rocksdb::Status& status() const { return status_; }
  static std::string Key(uint64_t slot) {
    std::string k(8, '\0');
    for (int i = 7; i >= 0; --i, slot >>= 8) k[i] = static_cast<char>(slot & 0xff);
    return k;
  }
  bool Has(int cf, uint64_t slot) {
    std::string v;
    return db_->Get(rocksdb::ReadOptions(), handles_[cf], Key(slot), &v).ok();
  }
  bool HasData(uint64_t slot) { return Has(1, slot); }
  bool HasMeta(uint64_t slot) { return Has(2, slot); }
  rocksdb::Status PutMeta(uint64_t slot, const std::string& value) {
    return db_->Put(rocksdb::WriteOptions(), handles_[2], Key(slot), value);
  }
  // Bytes of the data column family's table files after a full compaction.
  uint64_t CompactedDataBytes() {
    rocksdb::CompactRangeOptions o;
    o.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForce;
    if (!db_->CompactRange(o, handles_[1], nullptr, nullptr).ok()) return ~uint64_t{0};
    uint64_t v = 0;
    db_->GetIntProperty(handles_[1], "rocksdb.total-sst-files-size", &v);
    return v;
  }

 private:
  rocksdb::Status status_;
  std::vector<rocksdb::ColumnFamilyHandle*> handles_;
  std::unique_ptr<rocksdb::DB> db_;
};

// Bytes a move wrote but never committed before the process stopped (data, no metadata),
// and metadata that does not parse, are removed by the next Recover(): they could never
// be served, and until this they stayed on disk for good. Committed blocks, and a slot
// this process allocated and wrote before recovering, keep their bytes.
TEST(DiskTier, RecoveryRemovesBytesWithoutMetadata) {
  TierOptions o = testing::Opts(64, 256 << 10);
  o.path = testing::TempDir("orphans");
  constexpr uint64_t kBig = 256 << 10;
  std::vector<uint64_t> committed, orphaned;
  {
    auto tier = DiskTier::Open(o).value();
    for (int i = 0; i < 6; ++i) {
      Extent e = tier->Allocate("t", kBig).value();
      auto data = testing::Pattern(kBig, i);
      BlockWrite w{e, data.data(), kBig};
      ASSERT_TRUE(tier->Write(std::span<const BlockWrite>(&w, 1)).ok());
      if (i % 2 == 0) {  // slots 1, 3, 5 commit; 2, 4, 6 (the last) never do
        v1::KvBlockMeta meta;
        meta.set_tenant("t");
        meta.set_bytes(kBig);
        meta.set_checksum(BlockChecksum(data.data(), data.size()));
        ASSERT_TRUE(tier->PersistMeta(e, meta).ok());
        committed.push_back(e.slot);
      } else {
        orphaned.push_back(e.slot);
      }
    }
    ASSERT_TRUE(tier->Close().ok());  // flushed: the uncommitted bytes are in table files
  }
  const uint64_t garbled = committed[1];  // its metadata is overwritten with junk
  {
    RawDisk raw(o.path);
    ASSERT_TRUE(raw.status().ok()) << raw.status().ToString();
    ASSERT_TRUE(raw.PutMeta(garbled, std::string("\xff\xff\xff", 3)).ok());
    for (uint64_t s : orphaned) ASSERT_TRUE(raw.HasData(s)) << s;
  }
  {
    auto tier = DiskTier::Open(o).value();
    Extent mine = tier->Allocate("t", 4096).value();  // this process's, before Recover
    auto data = testing::Pattern(4096, 42);
    BlockWrite w{mine, data.data(), 4096};
    ASSERT_TRUE(tier->Write(std::span<const BlockWrite>(&w, 1)).ok());
    auto found = tier->Recover();
    ASSERT_TRUE(found.ok()) << found.status();
    std::vector<uint64_t> slots;
    for (const auto& [extent, meta] : *found) slots.push_back(extent.slot);
    EXPECT_EQ(slots, (std::vector<uint64_t>{committed[0], committed[2]}));
    std::vector<char> back(4096);
    BlockRead r{mine, back.data(), 4096};
    ASSERT_TRUE(tier->Read(std::span<const BlockRead>(&r, 1)).ok());
    EXPECT_EQ(back, data);
    ASSERT_TRUE(tier->Close().ok());
    RawDisk raw(o.path);
    ASSERT_TRUE(raw.status().ok()) << raw.status().ToString();
    for (uint64_t s : {committed[0], committed[2], mine.slot}) EXPECT_TRUE(raw.HasData(s)) << s;
    for (uint64_t s : orphaned) EXPECT_FALSE(raw.HasData(s)) << s;
    EXPECT_FALSE(raw.HasData(garbled));
    EXPECT_FALSE(raw.HasMeta(garbled));
    EXPECT_TRUE(raw.HasMeta(committed[0]));
    // The space comes back at compaction: two 256 KiB blocks and a 4 KiB one remain of
    // six 256 KiB values.
    EXPECT_LT(raw.CompactedDataBytes(), 3 * kBig);
  }
  // A second recovery finds the two committed blocks again and removes nothing more.
  auto tier = DiskTier::Open(o).value();
  auto again = tier->Recover();
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->size(), 2u);
}

}  // namespace
}  // namespace switchyard::kv_tiers
