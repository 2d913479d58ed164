// The RocksDB options of the disk tier, exposed so that a baseline (bench/kv_tiers) can run
// raw RocksDB Put/Get with exactly the options the tier uses, and so the choices live in
// one place. The rationale for each choice is in kv_tiers/README.md ("RocksDB options").
//
// Ownership: plain values; the caches passed in are shared. Thread-safety: pure functions.
#pragma once

#include <rocksdb/cache.h>
#include <rocksdb/options.h>

#include <memory>
#include <vector>

#include "kv_tiers/disk_tier.h"

namespace switchyard::kv_tiers {

// DB-wide options (create if missing, column families created on open).
rocksdb::DBOptions DiskTierDbOptions();
// The block-data column family: no compression, BlobDB for large values, `cache` as the
// block cache of the LSM's data blocks.
rocksdb::ColumnFamilyOptions DiskTierDataCfOptions(const DiskTierTuning& tuning,
                                                   const std::shared_ptr<rocksdb::Cache>& cache);
// The metadata column family: defaults with the shared block cache.
rocksdb::ColumnFamilyOptions DiskTierMetaCfOptions(const std::shared_ptr<rocksdb::Cache>& cache);
// Writes of block bytes: the WAL only when tuning.data_wal.
rocksdb::WriteOptions DiskTierDataWriteOptions(const DiskTierTuning& tuning);
// Reads of block bytes: no RocksDB checksum pass (the BlockManager verifies the block's
// XXH3-64 checksum at every validation and on recovery, so a second pass over the bytes
// would only cost time) and no block-cache fill (a block is read once into its
// destination tier).
rocksdb::ReadOptions DiskTierDataReadOptions();
// Waits until `db` has no memtable flush and no compaction pending for any of `cfs`, and
// none running, polling RocksDB's properties every 100 us; TimedOut after `timeout_ms`.
// Shared by DiskTier::WaitIdle and the raw-RocksDB baseline, so that both wait alike.
rocksdb::Status DiskTierWaitIdle(rocksdb::DB* db,
                                 const std::vector<rocksdb::ColumnFamilyHandle*>& cfs,
                                 int timeout_ms = 60000);

}  // namespace switchyard::kv_tiers
