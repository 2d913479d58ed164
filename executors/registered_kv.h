// RegisteredKvPool: an engine's KV pool over memory the engine owns, registered with
// Switchyard as a descriptor list, seen by the KV mover as an EngineKv (engine_kv.h).
//
// A serving stack that embeds Switchyard keeps its KV cache in its own memory (a block pool
// it allocated: host memory, or device memory in a CUDA build). It describes that memory
// once, as regions (address, length, device "cpu" or "cuda:N"); the pool cuts every region
// into slots of `block_bytes` (the tail of a region shorter than a block is unused) and
// hands them out as the engine's KV blocks. The engine keeps its block table through the
// pool: Resize() gives a context the blocks its token count needs (or takes them back),
// Blocks() tells the engine where they are, SetValid() says how many tokens have KV
// computed, SetBusy() marks a context a step is writing. Through EngineKv, TieredKvMover
// (tiered_mover.h, Options::engine_kv) then moves the engine's real bytes: a demotion copies
// the blocks ExportKv shows (refused while busy) into another tier under the commit rule;
// a prefetch fills the blocks ImportTargets names and CommitImport makes them readable —
// until that commit valid_tokens is 0, so the engine must not read them (invariant 1).
//
// Devices. "cpu" memory is read and written in place. "cuda:N" memory is accepted only in a
// CUDA build (SWITCHYARD_WITH_CUDA) with device N present; other builds refuse it with an
// error naming the region. (Device regions are staged through host copies for the mover.)
//
// Ownership: the memory stays the caller's; it must outlive the pool and must not be freed
// or reused for anything else while registered. The pool owns only its slot accounting.
// Thread-safety: loop-thread only, like the Engine that uses it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/result.h"
#include "base/status.h"
#include "executors/engine_kv.h"

namespace switchyard::executors {

// One piece of registered memory.
struct KvMemoryRegion {
  void* address = nullptr;
  uint64_t length = 0;         // bytes
  std::string device = "cpu";  // "cpu" or "cuda:N"
};

class RegisteredKvPool final : public EngineKv {
 public:
  struct Options {
    std::string name = "registered KV pool";
    uint64_t block_bytes = 0;   // bytes of one KV block (block_tokens tokens of every layer)
    int64_t block_tokens = 16;  // tokens per block
    std::vector<KvMemoryRegion> regions;
  };
  // InvalidArgument naming the region for a null address, a region shorter than a block,
  // overlapping regions, an unknown device, or "cuda:N" outside a CUDA build; FailedPrecondition
  // when device N does not answer.
  static Result<std::unique_ptr<RegisteredKvPool>> Create(Options options);
  ~RegisteredKvPool() override;

  // The engine's side.
  int64_t num_blocks() const { return static_cast<int64_t>(slots_.size()); }
  int64_t free_blocks() const { return static_cast<int64_t>(free_.size()); }
  int64_t block_tokens() const { return options_.block_tokens; }
  // Gives `context` the blocks for `tokens` tokens (its last blocks go when it shrinks; 0
  // removes it). ResourceExhausted naming the context when the pool lacks free blocks (the
  // context is left as it was).
  Status Resize(const std::string& context, int64_t tokens);
  // The context's block addresses, in order (empty when not held).
  std::vector<void*> Blocks(const std::string& context) const;
  int64_t tokens(const std::string& context) const;  // -1: not held
  // Tokens of the context whose KV is computed (clamped to its tokens). NotFound when not held.
  Status SetValid(const std::string& context, int64_t valid_tokens);
  int64_t valid_tokens(const std::string& context) const;  // -1: not held
  // A step writes into the context: ExportKv refuses it until SetBusy(context, false).
  void SetBusy(const std::string& context, bool busy);
  // Whether every region is host memory the engine may read in place.
  bool host_memory() const { return host_only_; }

  // EngineKv.
  std::string kv_pool_name() const override { return options_.name; }
  uint64_t kv_block_bytes() const override { return options_.block_bytes; }
  Result<ContextKvView> ExportKv(const std::string& context) const override;
  Result<std::vector<void*>> ImportTargets(const std::string& context) override;
  Status CommitImport(const std::string& context, int64_t valid_tokens) override;

 private:
  struct Slot {
    void* address = nullptr;
    int device = -1;  // -1: host memory; else the CUDA device
  };
  struct Ctx {
    std::vector<uint32_t> slots;
    int64_t tokens = 0;
    int64_t valid = 0;
    bool busy = false;
  };
  explicit RegisteredKvPool(Options options) : options_(std::move(options)) {}
  Status Stage(const Ctx& c) const;    // device slots -> staging_ (for ExportKv)
  Status Unstage(const Ctx& c) const;  // staging_ -> device slots (CommitImport)

  Options options_;
  std::vector<Slot> slots_;
  std::vector<uint32_t> free_;  // a stack: the lowest slot is handed out first
  std::unordered_map<std::string, Ctx> ctxs_;
  bool host_only_ = true;
  // Host copies of device blocks for the mover (device regions only).
  mutable std::unordered_map<uint32_t, std::vector<char>> staging_;
};

}  // namespace switchyard::executors
