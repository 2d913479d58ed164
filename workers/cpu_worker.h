// CpuWorker: the CPU engine of a joined worker — `switchyard worker --join HOST:PORT
// --engine cpu --model PATH` (workers/worker_agent.h).
//
// It holds the model the worker loaded (a shape file with random weights, or a Llama
// checkpoint directory: the same one serve serves, which serve checks by its shape), the
// token ids of the contexts the worker computes, and the computing runner
// (cpu_engine/cpu_step_runner.h) whose KV pool holds their real KV. Serve's scheduler
// decides every step (its BatchingEngine) and sends the runner's calls; each admission
// carries the token ids serve recorded for the sequence's contexts (SeqAdmit.
// context_tokens), so a context this worker never saw — moved here, or rebuilt here —
// gets the same ids, hence the same KV, as on the worker that first computed it.
//
// KV orders (worker_control.proto):
//   Export: the pool's blocks of a context are copied into new blocks of the worker's own
//     KV store (kv_tiers KvStoreServer::CommitLocalHashing: hashed once by the store, then
//     checked and committed as a received put — epochs, owner, generation, capacity), under the ids
//     and generations serve named; serve then moves them on like any block of that store.
//   Import: committed store blocks (owner, epochs, generation checked by the store's
//     lookup; the checksum serve committed must match the store's) are copied into the
//     pool blocks the engine reserved for the context; only then are `valid_tokens` of its
//     KV made readable (on any error none is).
// A context a step is computing into is not exported or imported until the step ended
// (busy(); the agent defers the order).
//
// Thread-safety: the agent's loop thread only.
#pragma once

#include <memory>
#include <string>

#include "base/event_loop.h"
#include "base/result.h"
#include "cpu_engine/cpu_engine.h"
#include "cpu_engine/cpu_step_runner.h"
#include "kv_store/kv_store_server.h"
#include "proto/switchyard/v1/worker_control.pb.h"

namespace switchyard::workers {

class CpuWorker {
 public:
  // InvalidArgument naming the path (and the file or tensor) when it cannot be loaded.
  static Result<std::unique_ptr<CpuWorker>> Load(const std::string& path);

  // The model as the hello names it (serve compares it with its own).
  v1::ModelConfig model_config() const;
  const cpu_engine::Model& model() const { return *model_; }
  // The runner, with a pool of the welcome's size (kv_pool_bytes, kv_block_tokens);
  // InvalidArgument when the welcome has no pool figures. Owned by the caller; this
  // object keeps a pointer to it and must not outlive it.
  Result<std::unique_ptr<executors::StepRunner>> MakeRunner(EventLoop* loop,
                                                            const v1::WorkerWelcome& welcome,
                                                            const std::string& worker_id);

  // Before the runner's OnAdmit: the ids the admission carries replace the log's.
  void RecordTokens(const v1::SeqAdmit& m);
  // A context left the pool (OnResize to 0): its ids go (the next admission brings them).
  void Forget(const std::string& context) { tokens_.Forget(context); }
  bool busy(const std::string& context) const;

  void Export(const v1::KvExport& m, kv_store::KvStoreServer* store, v1::KvExportDone* out) const;
  void Import(const v1::KvImport& m, const kv_store::KvStoreServer* store, v1::KvImportDone* out);

 private:
  CpuWorker() = default;
  Status DoExport(const v1::KvExport& m, kv_store::KvStoreServer* store,
                  v1::KvExportDone* out) const;
  Status DoImport(const v1::KvImport& m, const kv_store::KvStoreServer* store);

  std::unique_ptr<cpu_engine::Model> model_;
  std::vector<std::vector<bool>> text_masks_;  // random weights: cpu_engine::TextMasks
  std::vector<std::string> token_bytes_;       // cpu_engine::ConstraintTokenBytes
  cpu_engine::TokenLog tokens_;
  cpu_engine::CpuStepRunner* runner_ = nullptr;  // made by MakeRunner, owned by the agent
};

}  // namespace switchyard::workers
