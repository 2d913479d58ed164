// CpuWorker (cpu_worker.h).
#include "workers/cpu_worker.h"

#include <chrono>
#include <cstring>

#include "cpu_engine/tokenizer.h"
#include "kv_tiers/prefix_hash.h"

namespace switchyard::workers {

namespace kv_store = kv_store;

Result<std::unique_ptr<CpuWorker>> CpuWorker::Load(const std::string& path) {
  std::unique_ptr<CpuWorker> w(new CpuWorker());
  auto m = cpu_engine::Model::Load(path);
  if (!m.ok()) return m.status().Annotate("--model " + path);
  w->model_ = std::move(*m);
  auto tok = cpu_engine::LoadTokenizer(path, w->model_->shape());
  if (!tok.ok()) return tok.status().Annotate("--model " + path);
  // As serve's engine (driver/engine_registry.cc): the tokenizer's stop ids, and a model
  // with random weights restricted to text (TextMasks).
  SY_RETURN_IF_ERROR(w->model_->AddEosIds((*tok)->eos_ids()));
  if (w->model_->shape().random_weights)
    w->text_masks_ = cpu_engine::TextMasks(**tok, w->model_->shape());
  w->token_bytes_ = cpu_engine::ConstraintTokenBytes(**tok, w->model_->shape().vocab_size);
  return w;
}

v1::ModelConfig CpuWorker::model_config() const {
  return cpu_engine::ToModelConfig(model_->shape());
}

Result<std::unique_ptr<executors::StepRunner>> CpuWorker::MakeRunner(
    EventLoop* loop, const v1::WorkerWelcome& welcome, const std::string& worker_id) {
  if (welcome.kv_pool_bytes() == 0 || welcome.kv_block_tokens() <= 0)
    return Status::InvalidArgument(
        "serve's welcome names no KV pool (kv_pool_bytes, kv_block_tokens): it does not serve "
        "engine cpu");
  const int64_t bt = welcome.kv_block_tokens();
  const uint64_t bpb = cpu_engine::KvBlockFloats(model_->shape(), bt) * sizeof(float);
  const int64_t blocks = static_cast<int64_t>((welcome.kv_pool_bytes() + bpb - 1) / bpb);
  SY_ASSIGN_OR_RETURN(
      std::unique_ptr<cpu_engine::CpuStepRunner> r,
      cpu_engine::CpuStepRunner::Create(loop, model_.get(), &tokens_, bt, blocks,
                                        "cpu engine KV pool (worker " + worker_id + ")", "default",
                                        text_masks_, token_bytes_));
  runner_ = r.get();
  return std::unique_ptr<executors::StepRunner>(std::move(r));
}

void CpuWorker::RecordTokens(const v1::SeqAdmit& m) {
  for (const v1::ControlContextTokens& t : m.context_tokens())
    tokens_.Of(t.key()).assign(t.ids().begin(), t.ids().end());
}

bool CpuWorker::busy(const std::string& context) const { return runner_ && runner_->busy(context); }

namespace {
template <typename Done>
void SetStatus(const Status& st, std::chrono::steady_clock::time_point start, Done* out) {
  out->set_status_code(static_cast<int32_t>(st.code()));
  out->set_status_message(st.message());
  out->set_worker_time_ns(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start)
          .count());
}
}  // namespace

void CpuWorker::Export(const v1::KvExport& m, kv_store::KvStoreServer* store,
                       v1::KvExportDone* out) const {
  auto start = std::chrono::steady_clock::now();
  out->set_order_id(m.order_id());
  Status st = DoExport(m, store, out);
  if (!st.ok()) out->clear_checksums();
  SetStatus(st.Annotate("exporting " + m.context()), start, out);
}

Status CpuWorker::DoExport(const v1::KvExport& m, kv_store::KvStoreServer* store,
                           v1::KvExportDone* out) const {
  if (!runner_) return Status::FailedPrecondition("the worker's engine runs no steps yet");
  if (!store) return Status::FailedPrecondition("the worker has no KV store (--kv-listen none)");
  SY_ASSIGN_OR_RETURN(executors::ContextKvView v, runner_->ExportKv(m.context()));
  if (static_cast<int>(v.blocks.size()) != m.blocks_size())
    return Status::InvalidArgument("the order names " + std::to_string(m.blocks_size()) +
                                   " blocks, the pool holds " + std::to_string(v.blocks.size()));
  const uint64_t bpb = runner_->block_bytes();
  for (int i = 0; i < m.blocks_size(); ++i) {
    const v1::KvStoreBlock& b = m.blocks(i);
    if (b.bytes() != bpb)
      return Status::InvalidArgument("block " + std::to_string(i) + " is " +
                                     std::to_string(b.bytes()) + " B, the pool's are " +
                                     std::to_string(bpb));
    auto buf = std::make_shared<kv_store::ByteBuffer>(bpb);
    std::memcpy(buf->data.get(), v.blocks[static_cast<size_t>(i)], bpb);
    kv_store::BlockHeader h;
    h.communicator_epoch = m.store().communicator_epoch();
    h.model_epoch = m.store().model_epoch();
    h.generation = b.generation();
    h.length = bpb;
    h.workflow_id = m.store().workflow_id();
    h.context_id = m.store().context_id();
    h.blocks.push_back(kv_store::BlockRef{b.block_id(), bpb, 0});  // its checksum: the store's
    kv_store::RejectReason r = store->CommitLocalHashing(&h, buf);
    if (r != kv_store::RejectReason::kNone)
      return Status::Aborted("the KV store refused block " + std::to_string(i) + " (id " +
                             std::to_string(b.block_id()) +
                             "): " + std::string(kv_store::RejectReasonName(r)));
    out->add_checksums(h.blocks[0].checksum);
  }
  out->set_tokens(v.tokens);
  out->set_valid_tokens(v.valid_tokens);
  out->set_bytes(bpb * static_cast<uint64_t>(m.blocks_size()));
  return Status::OK();
}

void CpuWorker::Import(const v1::KvImport& m, const kv_store::KvStoreServer* store,
                       v1::KvImportDone* out) {
  auto start = std::chrono::steady_clock::now();
  out->set_order_id(m.order_id());
  Status st = DoImport(m, store);
  if (st.ok() && runner_) out->set_bytes(runner_->block_bytes() * m.blocks_size());
  SetStatus(st.Annotate("importing " + m.context()), start, out);
}

Status CpuWorker::DoImport(const v1::KvImport& m, const kv_store::KvStoreServer* store) {
  if (!runner_) return Status::FailedPrecondition("the worker's engine runs no steps yet");
  if (!store) return Status::FailedPrecondition("the worker has no KV store (--kv-listen none)");
  // Every block first (the store's checks), then the pool: nothing is copied from a set
  // that is not whole.
  std::vector<kv_store::StoredBlock> found;
  const uint64_t bpb = runner_->block_bytes();
  for (int i = 0; i < m.blocks_size(); ++i) {
    const v1::KvStoreBlock& b = m.blocks(i);
    kv_store::GetRequest g;
    g.communicator_epoch = m.store().communicator_epoch();
    g.model_epoch = m.store().model_epoch();
    g.generation = b.generation();
    g.workflow_id = m.store().workflow_id();
    g.context_id = m.store().context_id();
    g.block_ids = {b.block_id()};
    std::vector<kv_store::StoredBlock> one;
    kv_store::RejectReason r = store->ReadCommitted(g, &one);
    if (r != kv_store::RejectReason::kNone || one.size() != 1)
      return Status::DataLoss("block " + std::to_string(i) + " (id " +
                                  std::to_string(b.block_id()) +
                                  ") is not readable in the KV "
                                  "store: " +
                                  std::string(kv_store::RejectReasonName(r)),
                              ErrorScope::kBlock);
    if (one[0].bytes != bpb || (b.has_checksum() && b.checksum() != one[0].checksum))
      return Status::DataLoss("block " + std::to_string(i) + " (id " +
                                  std::to_string(b.block_id()) +
                                  ") differs from what serve committed (bytes or checksum)",
                              ErrorScope::kBlock);
    found.push_back(std::move(one[0]));
  }
  SY_ASSIGN_OR_RETURN(std::vector<void*> targets, runner_->ImportTargets(m.context()));
  if (targets.size() < found.size())
    return Status::FailedPrecondition("the pool reserved " + std::to_string(targets.size()) +
                                      " blocks, the order brings " + std::to_string(found.size()));
  for (size_t i = 0; i < found.size(); ++i) std::memcpy(targets[i], found[i].data(), bpb);
  return runner_->CommitImport(m.context(), m.valid_tokens());
}

}  // namespace switchyard::workers
