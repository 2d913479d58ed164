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
#include <string>
#include <vector>

#include "base/result.h"
#include "base/status.h"

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

}  // namespace switchyard::executors
