// EngineKv: the KV pool of an engine that holds real bytes (CpuEngine), as a KV mover
// sees it.
//
// An engine whose steps compute keeps every context's KV in blocks of its pool (the HBM
// role of that engine). A demotion out of the pool copies the blocks of the context as
// ExportKv shows them; a prefetch into the pool fills the blocks that Engine::Import
// reserved (ImportTargets) and then commits them (CommitImport): until that commit no
// sequence reads them, and a move that fails never commits (the runtime Releases the
// reservation). `valid_tokens` is how many of the context's tokens have KV computed (the
// last output token of a finished call is computed by the next call), carried with the
// bytes so that the importing engine knows what it still has to compute.
//
// Thread-safety: loop-thread only, like the Engine.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/result.h"
#include "base/status.h"
#include "kv_tiers/tier.h"

namespace switchyard::executors {

struct ContextKvView {
  int64_t tokens = 0;               // token slots the context holds
  int64_t valid_tokens = 0;         // of which have KV computed
  std::vector<const void*> blocks;  // BlocksFor(tokens) blocks of block_bytes each
};

class EngineKv {
 public:
  virtual ~EngineKv() = default;
  virtual std::string kv_pool_name() const = 0;
  virtual uint64_t kv_block_bytes() const = 0;
  // The context's blocks. NotFound when the pool does not hold it; FailedPrecondition while
  // a step computes into it.
  virtual Result<ContextKvView> ExportKv(const std::string& context) const = 0;
  // The blocks Import reserved for the context, in order, to be filled by a move.
  virtual Result<std::vector<void*>> ImportTargets(const std::string& context) = 0;
  // The move committed: `valid_tokens` of the context's KV may be read from now on.
  virtual Status CommitImport(const std::string& context, int64_t valid_tokens) = 0;
};

// The KV pool of an engine that computes in another process (a joined worker's CPU engine,
// workers/remote_kv.h). Its blocks are not addressable here: they move through that
// worker's KV store, which is a tier of this process's BlockManager (the worker's HBM tier
// here), and the worker copies between its pool and its store itself, in process:
//   Export: the worker writes the context's pool blocks — as they are once every step sent
//     before ended — into `targets` (extents of the store tier, one per pool block, in
//     order); the store hashes, validates and commits each. `done` gets the checksums the
//     store committed and the context's valid tokens.
//   Import: the worker reads the committed store blocks `sources` (each checked against
//     `checksums`) into the pool blocks the engine's Import reserved, then makes
//     `valid_tokens` of them readable; on an error nothing of it is readable.
// `done` runs on the loop, exactly once (a lost worker fails it).
class RemoteEngineKv {
 public:
  struct Exported {
    int64_t valid_tokens = 0;
    std::vector<uint64_t> checksums;  // per block
  };
  virtual ~RemoteEngineKv() = default;
  virtual std::string kv_pool_name() const = 0;
  // Blocks the pool holds for the context (-1: none).
  virtual int64_t kv_blocks(const std::string& context) const = 0;
  virtual void Export(const std::string& context, std::vector<kv_tiers::Extent> targets,
                      std::function<void(Result<Exported>)> done) = 0;
  virtual void Import(const std::string& context, std::vector<kv_tiers::Extent> sources,
                      std::vector<uint64_t> checksums, int64_t valid_tokens,
                      std::function<void(Status)> done) = 0;
};

}  // namespace switchyard::executors
