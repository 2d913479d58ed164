#include "driver/engine_registry.h"

#include <algorithm>

#include "base/logging.h"
#include "cpu_engine/cpu_engine.h"
#include "cpu_engine/tokenizer.h"
#include "executors/model_cost.h"
#include "executors/simulated_engine.h"
#include "executors/step_cost.h"
#include "executors/table_cost_model.h"

namespace switchyard::driver {

const scheduler::ComputeCostModel* ServedModel::core_cost() const {
  if (table_cost) return table_cost.get();
  return cost.get();
}

namespace {

// Embedded default model: Llama-3.1-8B (configs/models/llama-3.1-8b.json) on an H100-SXM
// (configs/gpus/h100.json), priced by the roofline of executors/model_cost.h; the KV
// layout of the emulated tiers is the same model's.
v1::ModelConfig DefaultModel() {
  v1::ModelConfig m;
  m.set_name("Llama-3.1-8B");
  m.set_num_layers(32);
  m.set_num_kv_heads(8);
  m.set_head_dim(128);
  m.set_kv_dtype(v1::BF16);
  m.set_hidden_size(4096);
  m.set_num_attention_heads(32);
  m.set_intermediate_size(14336);
  m.set_vocab_size(128256);
  m.set_num_parameters(8030261248ULL);
  m.set_tensor_parallel(1);
  return m;
}

// The embedded default GPU: an H100-SXM (configs/gpus/h100.json).
v1::GpuSpec DefaultGpu() {
  v1::GpuSpec g;
  g.set_name("H100-SXM");
  g.set_hbm_bytes(80000000000ULL);
  g.set_hbm_bandwidth_bytes_per_s(3.35e12);
  g.set_bf16_flops(9.89e14);
  g.set_pcie_bandwidth_bytes_per_s(5.0e10);
  g.set_nvlink_bandwidth_bytes_per_s(9.0e11);
  g.set_nic_bandwidth_bits_per_s(4.0e11);
  g.set_compute_efficiency(0.6);
  g.set_memory_efficiency(0.8);
  return g;
}

// What the core's estimates assume of this machine's CPU when the CPU engine runs the
// model (rough figures of a 2-core VM: the core only ranks choices with them).
v1::GpuSpec CpuSpec(uint64_t pool_bytes) {
  v1::GpuSpec g;
  g.set_name("cpu (this machine, rough figures for the scheduler's estimates)");
  g.set_hbm_bytes(pool_bytes);
  g.set_hbm_bandwidth_bytes_per_s(1.0e10);
  g.set_bf16_flops(5.0e10);
  g.set_pcie_bandwidth_bytes_per_s(5.0e9);
  g.set_nvlink_bandwidth_bytes_per_s(5.0e9);
  g.set_nic_bandwidth_bits_per_s(1.0e10);
  g.set_compute_efficiency(0.5);
  g.set_memory_efficiency(0.5);
  return g;
}

// HBM left for KV on one worker: the GPU's HBM less its share of the model's BF16 weights.
Result<uint64_t> KvHbmBytes(const v1::ModelConfig& m, const v1::GpuSpec& g) {
  uint64_t tp = std::max<uint32_t>(1, m.tensor_parallel());
  uint64_t weights = m.num_parameters() * 2 / tp;
  if (g.hbm_bytes() <= weights)
    return Status::InvalidArgument("GPU '" + g.name() + "' has " + std::to_string(g.hbm_bytes()) +
                                   " B of HBM, not more than model '" + m.name() +
                                   "''s BF16 weights (" + std::to_string(weights) +
                                   " B per GPU); set hbmBytesPerWorker or a larger GPU");
  return g.hbm_bytes() - weights;
}

// The simulated engine: a model shape priced on a GPU spec; no weights, emulated KV.
Status LoadSimulated(ServedModelSpec* s, std::shared_ptr<cpu_engine::TokenLog>, ServedModel* out) {
  out->model = s->model_config ? *s->model_config : DefaultModel();
  if (s->id.empty()) s->id = out->model.name();
  v1::GpuSpec gpu = s->gpu ? *s->gpu : DefaultGpu();
  SY_ASSIGN_OR_RETURN(auto cost, executors::RooflineCostModel::Create(out->model, gpu));
  out->cost = std::make_unique<executors::RooflineCostModel>(std::move(cost));
  SY_ASSIGN_OR_RETURN(executors::RooflineStepCost step,
                      executors::RooflineStepCost::Create(out->model, gpu));
  out->step_cost = std::make_unique<executors::RooflineStepCost>(std::move(step));
  if (!s->step_table.empty()) {
    SY_ASSIGN_OR_RETURN(executors::TableStepCost table,
                        executors::TableStepCost::FromFile(s->step_table));
    out->step_cost = std::make_shared<executors::TableStepCost>(std::move(table));
    out->table_cost = std::make_unique<executors::StepTableCostModel>(out->step_cost,
                                                                      out->cost->KvBytesPerToken());
  }
  if (s->hbm_bytes_per_worker == 0) {
    SY_ASSIGN_OR_RETURN(s->hbm_bytes_per_worker, KvHbmBytes(out->model, gpu));
  }
  return Status::OK();
}

Result<EngineWorker> MakeSimulated(EventLoop* loop, int worker,
                                   const executors::EngineLimits& limits, const ServedModel& m) {
  EngineWorker w;
  w.engine = std::make_unique<executors::SimulatedEngine>(loop, worker, limits, m.step_cost.get(),
                                                          executors::SimulatedEngine::Options{});
  return w;
}

// The storage types asked for (--weight-dtype, --kv-dtype; "": the model's own).
Result<cpu_engine::LoadOptions> CpuLoadOptions(const ServedModelSpec& s) {
  cpu_engine::LoadOptions o;
  const std::pair<const std::string*, std::optional<cpu_engine::DType>*> fields[] = {
      {&s.weight_dtype, &o.weight_dtype}, {&s.kv_dtype, &o.kv_dtype}};
  for (const auto& [text, out] : fields) {
    if (text->empty()) continue;
    *out = cpu_engine::ParseDType(*text);
    if (!*out)
      return Status::InvalidArgument(
          std::string(text == &s.weight_dtype ? "--weight-dtype" : "--kv-dtype") +
          " must be f32 or bf16 (got '" + *text + "')");
  }
  return o;
}

// The CPU engine: the model at spec.model_path computed here, real KV bytes in a pool of
// spec.kv_pool_bytes per worker (its HBM). The model stops on its tokenizer's stop ids
// too (one set: Tokenizer::eos_ids); a model with random weights emits text only
// (TextMasks).
Status LoadCpu(ServedModelSpec* s, std::shared_ptr<cpu_engine::TokenLog> token_log,
               ServedModel* out) {
  SY_ASSIGN_OR_RETURN(cpu_engine::LoadOptions options, CpuLoadOptions(*s));
  auto m = cpu_engine::Model::Load(s->model_path, options);
  if (!m.ok()) return m.status().Annotate("--model " + s->model_path);
  out->cpu_model = std::move(*m);
  auto tok = cpu_engine::LoadTokenizer(s->model_path, out->cpu_model->shape());
  if (!tok.ok()) return tok.status().Annotate("--model " + s->model_path);
  out->tokenizer = std::move(*tok);
  SY_RETURN_IF_ERROR(out->cpu_model->AddEosIds(out->tokenizer->eos_ids()));
  const cpu_engine::ModelShape& shape = out->cpu_model->shape();
  if (shape.random_weights) out->text_masks = cpu_engine::TextMasks(*out->tokenizer, shape);
  out->token_bytes = cpu_engine::ConstraintTokenBytes(*out->tokenizer, shape.vocab_size);
  Log(LogLevel::kInfo, "cpu engine model loaded",
      LogKeys()
          .With("model", shape.Describe())
          .With("tokenizer", std::string(out->tokenizer->name()) + ", vocab " +
                                 std::to_string(out->tokenizer->vocab_size())));
  out->token_log = token_log ? token_log : std::make_shared<cpu_engine::TokenLog>();
  out->model = cpu_engine::ToModelConfig(shape);
  if (s->id.empty()) s->id = shape.name;  // without "(random ...)"
  out->kv_bytes_scale = 1;                // real bytes
  s->hbm_bytes_per_worker = s->kv_pool_bytes;
  out->offload_bytes = s->kv_offload_bytes;
  out->prefix_caching = s->prefix_caching;
  SY_ASSIGN_OR_RETURN(auto cost,
                      executors::RooflineCostModel::Create(out->model, CpuSpec(s->kv_pool_bytes)));
  out->cost = std::make_unique<executors::RooflineCostModel>(std::move(cost));
  return Status::OK();
}

Result<EngineWorker> MakeCpu(EventLoop* loop, int worker, const executors::EngineLimits& limits,
                             const ServedModel& m) {
  cpu_engine::CpuEngine::Options o;
  o.model = m.cpu_model.get();
  o.tokens = m.token_log.get();
  o.token_masks = m.text_masks;
  o.token_bytes = m.token_bytes;
  o.offload_bytes = m.offload_bytes;
  o.prefix_caching = m.prefix_caching;
  SY_ASSIGN_OR_RETURN(auto e, cpu_engine::CpuEngine::Create(loop, worker, limits, o));
  EngineWorker w;
  w.hbm = &e->pool();
  w.kv = e.get();
  w.engine = std::move(e);
  return w;
}

}  // namespace

ServedModel::ServedModel() = default;
ServedModel::~ServedModel() = default;

v1::ModelConfig EmbeddedDefaultModel() { return DefaultModel(); }
v1::GpuSpec EmbeddedDefaultGpu() { return DefaultGpu(); }

const EngineRegistry& EngineRegistry::Builtin() {
  static const EngineRegistry* registry = [] {
    auto* r = new EngineRegistry();
    auto add = [r](std::string_view name, auto load, auto make) {
      EngineImplementation impl;
      impl.kind = *executors::FindEngineKind(name);  // a kind of executors/engine_kind.h
      impl.load = load;
      impl.make = make;
      r->impls_.push_back(std::move(impl));
    };
    add("simulated", LoadSimulated, MakeSimulated);
    add("cpu", LoadCpu, MakeCpu);
    return r;
  }();
  return *registry;
}

Result<const EngineImplementation*> EngineRegistry::Find(const std::string& name,
                                                         std::string_view what) const {
  SY_ASSIGN_OR_RETURN(const executors::EngineKind* kind, executors::FindEngineKind(name, what));
  for (const EngineImplementation& impl : impls_)
    if (impl.kind == kind) return &impl;
  return Status::NotFound("no implementation of engine '" + name + "'");
}

}  // namespace switchyard::driver
