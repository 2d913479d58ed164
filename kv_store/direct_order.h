// The orders of a direct worker-to-worker put and their outcome: what serve's
// DirectPutMover (kv_tiers/remote/direct_put_mover.h) asks the worker holding the source blocks to
// do, and what that worker's DirectPutter (direct_put.h) reports back. The worker control protocol
// carries them as PutBlocks / PutBlocksDone (workers/control_msgs.h).
//
// Ownership: plain values. Thread-safety: none needed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/time.h"
#include "kv_store/kv_store_client.h"
#include "kv_store/kv_store_protocol.h"

namespace switchyard::kv_store {

// One end of a direct put: a worker's KV store as serve's tier of it knows it.
struct StoreRef {
  std::string address;  // HOST:PORT
  std::string transport = "ucx";
  transport::TransportConfig transport_config;
  uint64_t communicator_epoch = 0;  // the incarnation serve talks to
  uint64_t model_epoch = 0;
  std::string workflow_id, context_id;  // the blocks' owner there
};

struct DirectBlock {
  uint64_t source_block_id = 0;
  uint64_t source_generation = 0;
  uint64_t block_id = 0;  // at the destination
  uint64_t bytes = 0;
  std::optional<uint64_t> checksum;  // serve's stored checksum; unset: not checked
  v1::KvBlockMeta meta;              // the block as serve's BlockManager knows it (logs)
};

struct DirectPutOrder {
  uint64_t order_id = 0;
  uint64_t transfer_id = 0;  // serve's kv_tiers transfer (logs)
  StoreRef source;           // this worker's store
  StoreRef destination;
  uint64_t generation = 0;  // of the blocks at the destination
  v1::TrafficClass traffic_class = v1::THROUGHPUT;
  uint64_t flow_key = 0;
  Duration timeout{0};  // from receipt; 0: DirectPutterOptions::default_timeout
  std::vector<DirectBlock> blocks;
};

struct DirectPutOutcome {
  uint64_t order_id = 0;
  Status status;             // OK: the destination committed every block
  TransferEvents events;     // as this sender saw them, the destination's ack included
  bool unreachable = false;  // no session with the destination: nothing was sent
  // Set by serve's side: the destination's worker was lost (its store went with it).
  bool destination_lost = false;
  std::vector<BlockRef> blocks;  // committed: id at the destination, bytes, checksum
  uint64_t bytes = 0;
  uint32_t credit_retries = 0;
  Duration took{0};  // receipt to outcome
};

}  // namespace switchyard::kv_store
