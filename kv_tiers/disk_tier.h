// DiskTier: KV blocks in RocksDB, the "disk" tier.
//
// Two column families: "kv_block_data" (key: 8-byte big-endian slot, value: the block
// bytes) and "kv_block_meta" (same key, value: a serialized v1::KvBlockMeta). Writes of
// many blocks go in WriteBatches; a read is one bounded iterator seek per block whose value
// is copied once into the destination (Get and MultiGet copy more for MiB values). Options are
// chosen for large, incompressible values (see disk_tier.cc and kv_tiers/README.md): no compression
// on block data, BlobDB off by default (optional), block bytes written without the WAL (a cache:
// what a crash loses is detected by re-validation), metadata written with the WAL, and a flush on
// close so a clean close keeps everything. The options are in disk_tier_options.h (shared with the
// raw-RocksDB baseline of bench/kv_tiers).
//
// Ownership: the tier owns the DB handle; Close() (or the destructor) flushes and
// closes it. Recover() lists the blocks whose metadata survived, re-charging their bytes;
// the BlockManager re-validates them (checksum, epoch) before serving. Recover() also
// removes what no block can ever be served from: bytes written by a move that had not
// committed when the process stopped (a slot with data but no metadata) and metadata that
// does not parse, with their bytes. It touches only slots below the watermark of Open(),
// so blocks this process allocated are never removed.
// Thread-safety: as Tier (RocksDB is thread-safe; slot bookkeeping is under a mutex).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/mutex.h"
#include "kv_tiers/tier.h"

namespace rocksdb {
class DB;
class ColumnFamilyHandle;
}  // namespace rocksdb

namespace switchyard::kv_tiers {

struct DiskTierTuning {
  bool use_blob_files = false;        // BlobDB for large values
  uint64_t min_blob_size = 64 << 10;  // values at least this big go to blob files
  uint64_t write_buffer_bytes = 64ull << 20;
  uint64_t block_cache_bytes = 32ull << 20;  // data blocks of the LSM (metadata, small values)
  bool data_wal = false;                     // block bytes through the WAL?
};

class DiskTier final : public Tier {
 public:
  // Opens (creating if missing) the RocksDB at options.path.
  static Result<std::unique_ptr<DiskTier>> Open(const TierOptions& options,
                                                const DiskTierTuning& tuning = {});
  ~DiskTier() override;

  std::string name() const override { return "disk"; }
  TierKind kind() const override { return v1::TIER_DISK; }
  TierCapabilities capabilities() const override;
  Result<Extent> Allocate(const std::string& tenant, uint64_t bytes) override;
  Status Free(const Extent& extent) override;
  Status Write(std::span<const BlockWrite> writes) override;
  Status Read(std::span<const BlockRead> reads) override;
  Status PersistMeta(const Extent& extent, const v1::KvBlockMeta& meta) override;
  Result<std::vector<std::pair<Extent, v1::KvBlockMeta>>> Recover() override;

  // Flushes both column families' memtables to files (the data then lives in blob/SST
  // files, as it does after a restart); Unavailable when closed.
  Status Flush();

  // Waits until no flush or compaction is pending or running in the tier's DB (after a
  // Flush, the background work it caused has ended); Unavailable when closed.
  Status WaitIdle();

  // Flushes memtables and closes the DB; later calls fail with Unavailable.
  Status Close();

 private:
  DiskTier(const TierOptions& options, const DiskTierTuning& tuning);
  struct Live {
    std::string tenant;
    uint64_t bytes = 0;
  };
  Status CheckLive(const Extent& extent, uint64_t bytes) const REQUIRES(mu_);
  // Copies the value stored under `key` into read.dst (DataLoss when missing or short).
  Status ReadOne(const std::string& key, const BlockRead& read);
  // Deletes, in one WAL-logged batch, the `unreadable` metadata keys and every data value
  // below open_watermark_ whose slot is not in `recorded` (ascending) nor live: one range
  // deletion per gap between kept slots, so no block's bytes are read to find them.
  Status RemoveUnrecorded(const std::vector<uint64_t>& recorded,
                          const std::vector<std::string>& unreadable);

  DiskTierTuning tuning_;
  std::unique_ptr<rocksdb::DB> db_;
  rocksdb::ColumnFamilyHandle* data_cf_ = nullptr;
  rocksdb::ColumnFamilyHandle* meta_cf_ = nullptr;
  rocksdb::ColumnFamilyHandle* default_cf_ = nullptr;
  mutable Mutex mu_;
  std::map<uint64_t, Live> live_ GUARDED_BY(mu_);
  uint64_t next_slot_ GUARDED_BY(mu_) = 1;
  // One past the highest slot stored when the DB was opened: slots allocated by this
  // process are at or above it.
  uint64_t open_watermark_ = 1;
};

}  // namespace switchyard::kv_tiers
