#include "kv_tiers/disk_tier.h"

#include "base/logging.h"
#include "base/mutex.h"
#include "kv_tiers/disk_tier_options.h"

#include <rocksdb/db.h>
#include <rocksdb/options.h>
#include <rocksdb/table.h>
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

namespace switchyard::kv_tiers {
namespace {

constexpr char kDataCf[] = "kv_block_data";
constexpr char kMetaCf[] = "kv_block_meta";

std::string Key(uint64_t slot) {
  std::string k(8, '\0');
  for (int i = 7; i >= 0; --i, slot >>= 8) k[i] = static_cast<char>(slot & 0xff);
  return k;
}

uint64_t DecodeKey(const rocksdb::Slice& k) {
  uint64_t v = 0;
  for (size_t i = 0; i < k.size() && i < 8; ++i) v = (v << 8) | static_cast<uint8_t>(k[i]);
  return v;
}

Status FromRocks(const rocksdb::Status& s, const std::string& what) {
  if (s.ok()) return Status::OK();
  if (s.IsNotFound()) return Status::NotFound("disk tier: " + what + ": " + s.ToString());
  if (s.IsCorruption()) {
    return Status::DataLoss("disk tier: " + what + ": " + s.ToString(), ErrorScope::kTier);
  }
  return Status::Unavailable("disk tier: " + what + ": " + s.ToString(), ErrorScope::kTier);
}

}  // namespace

rocksdb::DBOptions DiskTierDbOptions() {
  rocksdb::DBOptions o;
  o.create_if_missing = true;
  o.create_missing_column_families = true;
  return o;
}

// KV bytes are bf16/fp8 activations: they do not compress, so compression is off (it would
// only cost CPU). Values are large (a Llama-3.1-8B block is 2 MiB). By default they stay in
// the LSM, where a Get pins the table block and the tier copies once out of it; with
// tuning.use_blob_files they go to blob files (compaction then rewrites references, not
// megabytes, but RocksDB 7.8 copies each blob once more on read: kv_tiers/README.md).
rocksdb::ColumnFamilyOptions DiskTierDataCfOptions(const DiskTierTuning& t,
                                                   const std::shared_ptr<rocksdb::Cache>& cache) {
  rocksdb::ColumnFamilyOptions o;
  o.compression = rocksdb::kNoCompression;
  o.write_buffer_size = t.write_buffer_bytes;
  o.enable_blob_files = t.use_blob_files;
  o.min_blob_size = t.min_blob_size;
  o.blob_compression_type = rocksdb::kNoCompression;
  o.enable_blob_garbage_collection = t.use_blob_files;
  rocksdb::BlockBasedTableOptions table;
  table.block_cache = cache;
  o.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
  return o;
}

// Metadata values are ~100 B protobufs: defaults (with the shared block cache).
rocksdb::ColumnFamilyOptions DiskTierMetaCfOptions(const std::shared_ptr<rocksdb::Cache>& cache) {
  rocksdb::ColumnFamilyOptions o;
  rocksdb::BlockBasedTableOptions table;
  table.block_cache = cache;
  o.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
  return o;
}

rocksdb::WriteOptions DiskTierDataWriteOptions(const DiskTierTuning& t) {
  rocksdb::WriteOptions wo;
  wo.disableWAL = !t.data_wal;
  return wo;
}

rocksdb::ReadOptions DiskTierDataReadOptions() {
  rocksdb::ReadOptions ro;
  ro.verify_checksums = false;
  ro.fill_cache = false;
  return ro;
}

rocksdb::Status DiskTierWaitIdle(rocksdb::DB* db,
                                 const std::vector<rocksdb::ColumnFamilyHandle*>& cfs,
                                 int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  auto busy = [&](rocksdb::ColumnFamilyHandle* cf, const std::string& property, bool* out) {
    uint64_t v = 0;
    if (!db->GetIntProperty(cf, property, &v)) {
      return rocksdb::Status::NotSupported("property " + property);
    }
    *out = *out || v != 0;
    return rocksdb::Status::OK();
  };
  for (;;) {
    bool any = false;
    for (auto* cf : cfs) {
      for (const char* p : {"rocksdb.mem-table-flush-pending", "rocksdb.compaction-pending",
                            "rocksdb.num-running-flushes", "rocksdb.num-running-compactions"}) {
        rocksdb::Status s = busy(cf, p, &any);
        if (!s.ok()) return s;
      }
    }
    if (!any) return rocksdb::Status::OK();
    if (std::chrono::steady_clock::now() > deadline) {
      return rocksdb::Status::TimedOut("background flush or compaction still running");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

DiskTier::DiskTier(const TierOptions& options, const DiskTierTuning& tuning)
    : Tier(options), tuning_(tuning) {}

Result<std::unique_ptr<DiskTier>> DiskTier::Open(const TierOptions& options,
                                                 const DiskTierTuning& tuning) {
  if (options.path.empty()) return Status::InvalidArgument("disk tier: options.path is empty");
  if (options.capacity_bytes == 0) {
    return Status::InvalidArgument("disk tier: capacity_bytes must be > 0");
  }
  std::unique_ptr<DiskTier> tier(new DiskTier(options, tuning));
  auto cache = rocksdb::NewLRUCache(tuning.block_cache_bytes);
  rocksdb::DBOptions db_options = DiskTierDbOptions();
  std::vector<rocksdb::ColumnFamilyDescriptor> cfs = {
      {rocksdb::kDefaultColumnFamilyName, rocksdb::ColumnFamilyOptions()},
      {kDataCf, DiskTierDataCfOptions(tuning, cache)},
      {kMetaCf, DiskTierMetaCfOptions(cache)},
  };
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* db = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(db_options, options.path, cfs, &handles, &db);
  if (!s.ok()) return FromRocks(s, "open " + options.path);
  tier->db_.reset(db);
  tier->default_cf_ = handles[0];
  tier->data_cf_ = handles[1];
  tier->meta_cf_ = handles[2];
  // New slots go past every key already stored, so reopening never overwrites. (No other
  // thread has the tier yet; the lock is for the analysis.)
  MutexLock lock(&tier->mu_);
  for (auto* cf : {tier->data_cf_, tier->meta_cf_}) {
    std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions(), cf));
    it->SeekToLast();
    if (it->Valid()) tier->next_slot_ = std::max(tier->next_slot_, DecodeKey(it->key()) + 1);
  }
  tier->open_watermark_ = tier->next_slot_;
  return tier;
}

DiskTier::~DiskTier() { (void)Close(); }

Status DiskTier::Close() {
  MutexLock lock(&mu_);
  if (!db_) return Status::OK();
  rocksdb::FlushOptions flush;
  rocksdb::Status s = db_->Flush(flush, {data_cf_, meta_cf_});
  for (auto* h : {data_cf_, meta_cf_, default_cf_}) (void)db_->DestroyColumnFamilyHandle(h);
  data_cf_ = meta_cf_ = default_cf_ = nullptr;
  rocksdb::Status c = db_->Close();
  db_.reset();
  SY_RETURN_IF_ERROR(FromRocks(s, "flush on close"));
  return FromRocks(c, "close");
}

Status DiskTier::Flush() {
  MutexLock lock(&mu_);
  if (!db_) return Status::Unavailable("disk tier: closed", ErrorScope::kTier);
  return FromRocks(db_->Flush(rocksdb::FlushOptions(), {data_cf_, meta_cf_}), "flush");
}

Status DiskTier::WaitIdle() {
  MutexLock lock(&mu_);
  if (!db_) return Status::Unavailable("disk tier: closed", ErrorScope::kTier);
  return FromRocks(DiskTierWaitIdle(db_.get(), {data_cf_, meta_cf_}), "wait for background work");
}

TierCapabilities DiskTier::capabilities() const {
  TierCapabilities c;
  c.persistent = true;
  return c;
}

Result<Extent> DiskTier::Allocate(const std::string& tenant, uint64_t bytes) {
  if (bytes == 0) return Status::InvalidArgument("disk tier: zero-byte allocation");
  SY_RETURN_IF_ERROR(Charge(tenant, bytes));
  MutexLock lock(&mu_);
  uint64_t slot = next_slot_++;
  live_[slot] = Live{tenant, bytes};
  return Extent{slot, bytes};
}

Status DiskTier::Free(const Extent& extent) {
  Live live;
  {
    MutexLock lock(&mu_);
    auto it = live_.find(extent.slot);
    if (it == live_.end()) {
      return Status::NotFound("disk tier: slot " + std::to_string(extent.slot) +
                              " is not allocated");
    }
    live = it->second;
    live_.erase(it);
    if (db_) {
      rocksdb::WriteBatch batch;
      std::string key = Key(extent.slot);
      (void)batch.Delete(data_cf_, key);
      (void)batch.Delete(meta_cf_, key);
      SY_RETURN_IF_ERROR(FromRocks(db_->Write(rocksdb::WriteOptions(), &batch), "free"));
    }
  }
  Uncharge(live.tenant, live.bytes);
  return Status::OK();
}

Status DiskTier::CheckLive(const Extent& extent, uint64_t bytes) const {
  if (!db_) return Status::Unavailable("disk tier: closed", ErrorScope::kTier);
  auto it = live_.find(extent.slot);
  if (it == live_.end()) {
    return Status::NotFound("disk tier: slot " + std::to_string(extent.slot) + " is not allocated");
  }
  if (bytes > it->second.bytes) {
    return Status::InvalidArgument("disk tier: " + std::to_string(bytes) + " B exceed slot " +
                                   std::to_string(extent.slot) + " of " +
                                   std::to_string(it->second.bytes) + " B");
  }
  return Status::OK();
}

// Values go to RocksDB in WriteBatches of at most kMaxBatchBytes: one batch per move for
// small blocks, and no single multi-MiB batch buffer (allocated, faulted in and copied
// whole) for large ones. The bytes are not committed until the BlockManager validated
// them, so a move whose later batch fails is simply a failed move.
constexpr uint64_t kMaxBatchBytes = 1ull << 20;

Status DiskTier::Write(std::span<const BlockWrite> writes) {
  {
    MutexLock lock(&mu_);
    for (const auto& w : writes) SY_RETURN_IF_ERROR(CheckLive(w.extent, w.bytes));
  }
  const rocksdb::WriteOptions wo = DiskTierDataWriteOptions(tuning_);
  size_t i = 0;
  while (i < writes.size()) {
    size_t end = i;
    uint64_t bytes = 0;
    while (end < writes.size() && (end == i || bytes + writes[end].bytes <= kMaxBatchBytes)) {
      bytes += writes[end++].bytes;
    }
    // Sized once (values plus per-record overhead): appending never re-allocates.
    rocksdb::WriteBatch batch(bytes + 64 * (end - i) + 64);
    for (; i < end; ++i) {
      (void)batch.Put(data_cf_, Key(writes[i].extent.slot),
                      rocksdb::Slice(static_cast<const char*>(writes[i].src), writes[i].bytes));
    }
    SY_RETURN_IF_ERROR(FromRocks(db_->Write(wo, &batch), "write batch"));
  }
  return Status::OK();
}

// One point lookup per block through a short-lived iterator bounded to that block's key,
// whose value is copied once, straight into the destination. Not Get(): with the tier's
// read options (no block-cache fill) a 2 MiB value is not pinnable, so Get copies it into
// the PinnableSlice's own string and a second copy into the destination followed (0.77x
// a raw Get into a reused string); the iterator holds the table block it read, and its
// value() points into it. Not MultiGet either: with RocksDB 7.8 and MiB values it measured
// 0.04-0.08 GB/s against 1.5-3 GB/s for Get (bench/RESULTS.md, kv_tiers). One iterator per
// block, not one per Read: a shared one measured about 10 % slower, with or without
// implicit readahead (not profiled further).
Status DiskTier::Read(std::span<const BlockRead> reads) {
  std::vector<std::string> keys;
  keys.reserve(reads.size());
  {
    MutexLock lock(&mu_);
    for (const auto& r : reads) {
      SY_RETURN_IF_ERROR(CheckLive(r.extent, r.bytes));
      keys.push_back(Key(r.extent.slot));
    }
  }
  for (size_t i = 0; i < reads.size(); ++i) SY_RETURN_IF_ERROR(ReadOne(keys[i], reads[i]));
  return Status::OK();
}

Status DiskTier::ReadOne(const std::string& key, const BlockRead& read) {
  const auto what = [&] { return "read slot " + std::to_string(read.extent.slot); };
  // The key's immediate successor bounds the seek to this one key.
  std::string upper = key;
  upper.push_back('\0');
  const rocksdb::Slice upper_slice(upper);
  rocksdb::ReadOptions ro = DiskTierDataReadOptions();
  ro.iterate_upper_bound = &upper_slice;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro, data_cf_));
  it->Seek(key);
  if (!it->Valid()) {
    SY_RETURN_IF_ERROR(FromRocks(it->status(), what()));
    return Status::DataLoss("disk tier: " + what() + ": no bytes stored", ErrorScope::kBlock);
  }
  const rocksdb::Slice value = it->value();
  if (it->key() != key || value.size() < read.bytes) {
    return Status::DataLoss("disk tier: " + what() + ": " + std::to_string(value.size()) +
                                " B stored, " + std::to_string(read.bytes) + " B asked",
                            ErrorScope::kBlock);
  }
  std::memcpy(read.dst, value.data(), read.bytes);
  return FromRocks(it->status(), what());
}

Status DiskTier::PersistMeta(const Extent& extent, const v1::KvBlockMeta& meta) {
  MutexLock lock(&mu_);
  SY_RETURN_IF_ERROR(CheckLive(extent, 0));
  std::string value;
  meta.SerializeToString(&value);
  // Through the WAL: a committed block's metadata survives a crash (its bytes are
  // re-validated against it on recovery).
  return FromRocks(db_->Put(rocksdb::WriteOptions(), meta_cf_, Key(extent.slot), value),
                   "persist meta");
}

Result<std::vector<std::pair<Extent, v1::KvBlockMeta>>> DiskTier::Recover() {
  std::vector<std::pair<Extent, v1::KvBlockMeta>> out;
  if (!db_) return Status::Unavailable("disk tier: closed", ErrorScope::kTier);
  std::vector<uint64_t> recorded;       // ascending: the CF is ordered by slot
  std::vector<std::string> unreadable;  // metadata keys
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), meta_cf_));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    uint64_t slot = DecodeKey(it->key());
    v1::KvBlockMeta meta;
    if (it->key().size() != 8 ||
        !meta.ParseFromArray(it->value().data(), static_cast<int>(it->value().size()))) {
      unreadable.push_back(it->key().ToString());  // cannot be validated: removed below
      continue;
    }
    recorded.push_back(slot);
    {
      MutexLock lock(&mu_);
      if (live_.count(slot)) continue;  // already known in this process
    }
    SY_RETURN_IF_ERROR(Charge(meta.tenant(), meta.bytes()));
    MutexLock lock(&mu_);
    live_[slot] = Live{meta.tenant(), meta.bytes()};
    next_slot_ = std::max(next_slot_, slot + 1);
    out.emplace_back(Extent{slot, meta.bytes()}, meta);
  }
  SY_RETURN_IF_ERROR(FromRocks(it->status(), "recover scan"));
  SY_RETURN_IF_ERROR(RemoveUnrecorded(recorded, unreadable));
  return out;
}

Status DiskTier::RemoveUnrecorded(const std::vector<uint64_t>& recorded,
                                  const std::vector<std::string>& unreadable) {
  rocksdb::WriteBatch batch;
  // The bytes of an unreadable record's slot are in a gap below, as it is not recorded.
  for (const std::string& key : unreadable) (void)batch.Delete(meta_cf_, key);
  // Slots live in this process stay too (a recovered block whose metadata was since
  // rewritten, or any slot of this process below the watermark: none today).
  std::vector<uint64_t> keep = recorded;
  {
    MutexLock lock(&mu_);
    for (const auto& [slot, live] : live_) {
      if (slot < open_watermark_) keep.push_back(slot);
    }
  }
  std::sort(keep.begin(), keep.end());
  keep.erase(std::unique(keep.begin(), keep.end()), keep.end());
  uint64_t from = 1, gaps = 0;  // slots start at 1
  for (uint64_t slot : keep) {
    if (slot >= open_watermark_) break;
    if (slot > from) {
      (void)batch.DeleteRange(data_cf_, Key(from), Key(slot));
      ++gaps;
    }
    from = slot + 1;
  }
  if (from < open_watermark_) {
    (void)batch.DeleteRange(data_cf_, Key(from), Key(open_watermark_));
    ++gaps;
  }
  if (batch.Count() == 0) return Status::OK();
  SY_RETURN_IF_ERROR(FromRocks(db_->Write(rocksdb::WriteOptions(), &batch), "remove unrecorded"));
  Log(LogLevel::kInfo, "disk tier: recovery found " + std::to_string(recorded.size()) +
                           " blocks with metadata; removed " + std::to_string(unreadable.size()) +
                           " unreadable metadata records and any bytes in the " +
                           std::to_string(gaps) + " slot ranges without metadata");
  return Status::OK();
}

}  // namespace switchyard::kv_tiers
