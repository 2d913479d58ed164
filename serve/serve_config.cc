#include "serve/serve_config.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <optional>
#include <set>
#include <string_view>

#include "conversation/upstream_api.h"
#include "cpu_engine/dtype.h"
#include "cpu_engine/model_shape.h"
#include "executors/engine_kind.h"
#include "proto/json.h"
#include "scheduler/link_file.h"
#include "scheduler/policy.h"
#include "upstream/upstream_client.h"

namespace switchyard::serve {

namespace {

// "name must be 0 or more, got -3" for a negative value.
Status CheckNotNegative(const std::string& name, double value) {
  if (value >= 0) return Status::OK();
  std::string shown = std::to_string(value);
  if (value == static_cast<double>(static_cast<int64_t>(value))) {
    shown = std::to_string(static_cast<int64_t>(value));
  }
  return Status::InvalidArgument(std::string(name) + " must be 0 or more, got " + shown);
}

Status FillHttp(const v1::ServiceConfig& config, http::HttpServerOptions* http) {
  SY_RETURN_IF_ERROR(CheckNotNegative("threads", config.threads()));
  SY_RETURN_IF_ERROR(CheckNotNegative("body_limit_bytes", config.body_limit_bytes()));
  if (config.threads() > 0) http->threads = config.threads();
  if (config.body_limit_bytes() > 0) {
    http->body_limit_bytes = static_cast<size_t>(config.body_limit_bytes());
  }
  return Status::OK();
}

// A tenant's request rate and bucket depth: 0 means the default (1000/s, twice the rate);
// a depth under one request would never admit one.
Status CheckRateLimit(const v1::TenantConfig& t) {
  SY_RETURN_IF_ERROR(CheckNotNegative("tenants[].rate_limit_per_s", t.rate_limit_per_s()));
  SY_RETURN_IF_ERROR(CheckNotNegative("tenants[].rate_burst", t.rate_burst()));
  if (t.rate_burst() > 0 && t.rate_burst() < 1) {
    return Status::InvalidArgument(
        "tenants[].rate_burst must be 0 (twice the rate) or at least 1, got " +
        std::to_string(t.rate_burst()));
  }
  return Status::OK();
}

// Retention and the in-memory count of ended workflows.
Status FillRetention(const v1::ServiceConfig& config, service::ServiceOptions* so) {
  if (config.ended_in_memory() < -1) {
    return Status::InvalidArgument("ended_in_memory must be -1, 0 or more, got " +
                                   std::to_string(config.ended_in_memory()));
  }
  SY_RETURN_IF_ERROR(CheckNotNegative("ended_retention_s", config.ended_retention_s()));
  SY_RETURN_IF_ERROR(CheckNotNegative("idempotency_retention_s", config.idempotency_retention_s()));
  so->ended_retention_s = config.ended_retention_s();
  so->idempotency_retention_s = config.idempotency_retention_s();
  // 0 keeps the default; -1 archives each workflow as soon as it ends.
  if (config.ended_in_memory() != 0) {
    so->ended_in_memory = static_cast<size_t>(std::max<int64_t>(0, config.ended_in_memory()));
  }
  return Status::OK();
}

// The state store's group commit delay: 0 keeps the default; -1 commits as soon as the
// last commit ends.
Status FillCommitDelay(const v1::ServiceConfig& config, service::ServiceOptions* so) {
  if (config.commit_delay_us() < -1) {
    return Status::InvalidArgument("commit_delay_us must be -1, 0 or more, got " +
                                   std::to_string(config.commit_delay_us()));
  }
  if (config.commit_delay_us() != 0) {
    so->commit_delay = std::chrono::microseconds(std::max<int64_t>(0, config.commit_delay_us()));
  }
  return Status::OK();
}

Status FillLinks(const v1::ServiceLinks& links, driver::SchedulerConfig* s) {
  SY_RETURN_IF_ERROR(CheckNotNegative("links.pcie_bytes_per_s", links.pcie_bytes_per_s()));
  SY_RETURN_IF_ERROR(CheckNotNegative("links.pcie_latency_us", links.pcie_latency_us()));
  SY_RETURN_IF_ERROR(CheckNotNegative("links.nvlink_bytes_per_s", links.nvlink_bytes_per_s()));
  SY_RETURN_IF_ERROR(CheckNotNegative("links.nvlink_latency_us", links.nvlink_latency_us()));
  SY_RETURN_IF_ERROR(CheckNotNegative("links.disk_bytes_per_s", links.disk_bytes_per_s()));
  SY_RETURN_IF_ERROR(CheckNotNegative("links.disk_latency_us", links.disk_latency_us()));
  s->pcie_bytes_per_s = links.pcie_bytes_per_s();
  s->pcie_latency_s = links.pcie_latency_us() * 1e-6;
  s->nvlink_bytes_per_s = links.nvlink_bytes_per_s();
  s->nvlink_latency_s = links.nvlink_latency_us() * 1e-6;
  s->disk_bytes_per_s = links.disk_bytes_per_s();
  s->disk_latency_s = links.disk_latency_us() * 1e-6;
  return Status::OK();
}

// The link file's measured figures (--links wins over linksFile); a malformed file is an
// error naming the file and the field. Whether each link it names exists is checked when
// the topology is built (SchedulerDriver::Create).
Status FillLinkFile(const v1::ServiceConfig& config, const ServeFlags& flags,
                    driver::SchedulerConfig* s) {
  std::string path = !flags.links.empty() ? flags.links : config.links_file();
  if (path.empty()) return Status::OK();
  auto file = scheduler::LoadLinkFile(path);
  if (!file.ok()) return file.status().Annotate("--links (linksFile)");
  s->link_file = std::move(*file);
  s->link_file_path = path;
  return Status::OK();
}

// --weight-dtype / --kv-dtype of engine cpu: "f32" or "bf16" (empty: the model's own).
Status FillCpuDtypes(const ServeFlags& flags, driver::SchedulerConfig* s) {
  const std::pair<const char*, const std::string*> dtypes[] = {
      {"--weight-dtype", &flags.weight_dtype}, {"--kv-dtype", &flags.kv_dtype}};
  for (const auto& [flag, value] : dtypes)
    if (!value->empty() && !cpu_engine::ParseDType(*value))
      return Status::InvalidArgument(std::string(flag) + " must be f32 or bf16, got '" + *value +
                                     "'");
  s->cpu_weight_dtype = flags.weight_dtype;
  s->cpu_kv_dtype = flags.kv_dtype;
  return Status::OK();
}

// Prefill/decode disaggregation: the mode and serve's own workers' roles (the flags win).
Status FillDisaggregation(const v1::ServiceConfig& config, const ServeFlags& flags,
                          driver::SchedulerConfig* s) {
  const std::string mode =
      flags.disaggregation.empty() ? config.disaggregation() : flags.disaggregation;
  if (!mode.empty()) {
    Result<scheduler::Disaggregation> m = scheduler::ParseDisaggregation(mode);
    if (!m.ok()) return m.status().Annotate("--disaggregation (disaggregation)");
    s->disaggregation = *m;
  }
  std::vector<std::string> roles = flags.worker_roles;
  if (roles.empty()) roles.assign(config.worker_roles().begin(), config.worker_roles().end());
  s->worker_roles.clear();
  for (size_t i = 0; i < roles.size(); ++i) {
    Result<scheduler::WorkerRole> r = scheduler::ParseWorkerRole(roles[i]);
    if (!r.ok())
      return r.status().Annotate("--worker-roles (workerRoles[" + std::to_string(i) + "])");
    s->worker_roles.push_back(*r);
  }
  return Status::OK();
}

// The scheduler: model executor, workers, emulated HBM, policy, links, tenant weights.
Status FillEngine(const v1::ServiceConfig& config, const ServeFlags& flags,
                  driver::SchedulerConfig* s) {
  const v1::ServedModel* served = config.models_size() > 0 ? &config.models(0) : nullptr;
  std::string engine = !flags.engine.empty()                 ? flags.engine
                       : served && !served->engine().empty() ? served->engine()
                                                             : config.engine();
  if (engine.empty()) engine = "simulated";
  SY_ASSIGN_OR_RETURN(const executors::EngineKind* kind,
                      executors::FindEngineKind(engine, "--engine (engine)"));
  if (!s->engines_run_llm && !flags.engine.empty())
    return Status::InvalidArgument("--engine " + engine +
                                   " runs LLM nodes in the service; --llm reported hands them to "
                                   "an engine that reports: choose one");
  s->engine = engine;
  s->model_path = !flags.model.empty()                      ? flags.model
                  : served && !served->checkpoint().empty() ? served->checkpoint()
                                                            : config.model();
  if (flags.kv_pool_mib < 0) return Status::InvalidArgument("--kv-pool-mib must be > 0");
  SY_RETURN_IF_ERROR(CheckNotNegative("kv_pool_mib", static_cast<double>(config.kv_pool_mib())));
  int64_t mib = flags.kv_pool_mib > 0 ? flags.kv_pool_mib : config.kv_pool_mib();
  if (kind->computes) {
    // No model named: the embedded demo model (random weights, Qwen3's vocabulary).
    if (s->model_path.empty()) s->model_path = cpu_engine::kDemoModel;
    s->kv_pool_bytes = static_cast<uint64_t>(mib > 0 ? mib : 256) << 20;
    s->kv_offload_bytes = static_cast<uint64_t>(flags.kv_offload_mib) << 20;
    if (flags.prefix_caching != "" && flags.prefix_caching != "on" && flags.prefix_caching != "off")
      return Status::InvalidArgument("--prefix-caching: expected on or off, got '" +
                                     flags.prefix_caching + "'");
    s->cpu_prefix_caching = flags.prefix_caching != "off";
    if (!s->cpu_prefix_caching && flags.kv_offload_mib > 0)
      return Status::InvalidArgument(
          "--kv-offload-mib needs --prefix-caching on: the offload tier holds the prefix "
          "cache's blocks");
    return FillCpuDtypes(flags, s);
  }
  if (!flags.model.empty() || flags.kv_pool_mib > 0 || flags.kv_offload_mib > 0 ||
      !flags.weight_dtype.empty() || !flags.kv_dtype.empty() || !flags.prefix_caching.empty())
    return Status::InvalidArgument(
        "--model, --kv-pool-mib, --kv-offload-mib, --prefix-caching, --weight-dtype and "
        "--kv-dtype apply to --engine cpu only");
  return Status::OK();
}

// A message from `inline_msg` or the JSON file `file` (not both); `field` names them.
template <typename Msg>
Status FillFrom(const std::string& file, const Msg& inline_msg, const std::string& field,
                std::optional<Msg>* out) {
  bool has_inline = inline_msg.ByteSizeLong() > 0;
  if (!file.empty() && has_inline)
    return Status::InvalidArgument(field + "File and " + field + " both set: choose one");
  if (has_inline) *out = inline_msg;
  if (file.empty()) return Status::OK();
  SY_ASSIGN_OR_RETURN(std::string text, proto::ReadFile(file));
  Msg m;
  SY_RETURN_IF_ERROR(proto::ParseJson(text, &m, {.source = file}).Annotate(field + "File"));
  *out = std::move(m);
  return Status::OK();
}

// One served model's shape: engine "cpu" takes it from the checkpoint, "simulated" from
// model/modelFile and gpu/gpuFile. `field` names the entry ("models[1]").
template <typename Spec>
Status FillModelShape(const v1::ServedModel& m, const std::string& engine, const std::string& field,
                      Spec* s) {
  if (executors::EngineComputes(engine)) {
    if (!m.model_file().empty() || m.has_model() || !m.gpu_file().empty() || m.has_gpu() ||
        !m.step_table().empty())
      return Status::InvalidArgument(
          field +
          ": model/modelFile/gpu/gpuFile/stepTable price the simulated engine; engine 'cpu' "
          "takes its shape from " +
          field + ".checkpoint");
    return Status::OK();
  }
  if (!m.checkpoint().empty())
    return Status::InvalidArgument(field + ".checkpoint applies to engine 'cpu' only");
  s->step_table = m.step_table();
  SY_RETURN_IF_ERROR(FillFrom(m.model_file(), m.model(), field + ".model", &s->model_config));
  return FillFrom(m.gpu_file(), m.gpu(), field + ".gpu", &s->gpu);
}

// A served model after the first (models[i], i >= 1): its own workers, engine and shape.
Status FillExtraModel(const v1::ServiceConfig& config, const driver::SchedulerConfig& s, int i,
                      driver::ServedModelSpec* out) {
  const v1::ServedModel& m = config.models(i);
  const std::string field = "models[" + std::to_string(i) + "]";
  if (m.id().empty())
    return Status::InvalidArgument(field + ".id is required (models after the first)");
  out->id = m.id();
  out->aliases.assign(m.aliases().begin(), m.aliases().end());
  out->engine = !m.engine().empty()        ? m.engine()
                : !config.engine().empty() ? config.engine()
                                           : "simulated";
  SY_ASSIGN_OR_RETURN(const executors::EngineKind* kind,
                      executors::FindEngineKind(out->engine, field + ".engine"));
  if (kind->computes && !s.engines_run_llm)
    return Status::InvalidArgument(field +
                                   ".engine 'cpu' runs LLM nodes in the service; "
                                   "llmExecutor 'reported' hands them to an engine that "
                                   "reports: choose one");
  SY_RETURN_IF_ERROR(CheckNotNegative(field + ".workers", m.workers()));
  SY_RETURN_IF_ERROR(CheckNotNegative(field + ".hbm_bytes_per_worker",
                                      static_cast<double>(m.hbm_bytes_per_worker())));
  SY_RETURN_IF_ERROR(
      CheckNotNegative(field + ".kv_pool_mib", static_cast<double>(m.kv_pool_mib())));
  out->workers = m.workers() > 0 ? m.workers() : 1;
  out->hbm_bytes_per_worker = static_cast<uint64_t>(m.hbm_bytes_per_worker());
  if (kind->computes) {
    if (m.checkpoint().empty())
      return Status::InvalidArgument(field + ": engine 'cpu' needs " + field +
                                     ".checkpoint: a shape file such as "
                                     "configs/models/tiny-llama-4l.json (random weights) or a "
                                     "Llama checkpoint directory");
    out->model_path = m.checkpoint();
    int64_t mib = m.kv_pool_mib() > 0 ? m.kv_pool_mib() : config.kv_pool_mib();
    out->kv_pool_bytes = static_cast<uint64_t>(mib > 0 ? mib : 256) << 20;
  } else if (m.kv_pool_mib() > 0) {
    return Status::InvalidArgument(field + ".kv_pool_mib applies to engine 'cpu' only");
  }
  return FillModelShape(m, out->engine, field, out);
}

// The served models (ServiceConfig.models): the first one's id, aliases, and for the
// simulated engine its shape and GPU, into SchedulerConfig's own fields; the others into
// extra_models, each on its own workers. Names (ids and aliases) are unique across models.
Status FillModels(const v1::ServiceConfig& config, const ServeFlags& flags,
                  driver::SchedulerConfig* s) {
  if (config.models_size() == 0) return Status::OK();
  std::map<std::string, int> names;
  for (int i = 0; i < config.models_size(); ++i) {
    const v1::ServedModel& m = config.models(i);
    std::vector<std::string> own = {m.id()};
    own.insert(own.end(), m.aliases().begin(), m.aliases().end());
    for (size_t k = 0; k < own.size(); ++k) {
      const std::string& n = own[k];
      if (n.empty() && k == 0) continue;  // the first model's id defaults to its name
      std::string field = "models[" + std::to_string(i) + "]" +
                          (k == 0 ? ".id" : ".aliases[" + std::to_string(k - 1) + "]");
      if (n.empty()) return Status::InvalidArgument(field + " is empty");
      auto [it, fresh] = names.emplace(n, i);
      if (!fresh)
        return Status::InvalidArgument(field + ": '" + n + "' is repeated (also models[" +
                                       std::to_string(it->second) + "])");
    }
  }
  const v1::ServedModel& m = config.models(0);
  s->model_id = m.id();
  s->model_aliases.assign(m.aliases().begin(), m.aliases().end());
  SY_RETURN_IF_ERROR(CheckNotNegative("models[0].workers", m.workers()));
  SY_RETURN_IF_ERROR(CheckNotNegative("models[0].hbm_bytes_per_worker",
                                      static_cast<double>(m.hbm_bytes_per_worker())));
  if (m.workers() > 0 && config.workers() > 0 && m.workers() != config.workers())
    return Status::InvalidArgument("models[0].workers (" + std::to_string(m.workers()) +
                                   ") and workers (" + std::to_string(config.workers()) +
                                   ") disagree: set one");
  if (m.workers() > 0) s->workers = m.workers();
  if (m.hbm_bytes_per_worker() > 0)
    s->hbm_bytes_per_worker = static_cast<uint64_t>(m.hbm_bytes_per_worker());
  SY_RETURN_IF_ERROR(
      CheckNotNegative("models[0].kv_pool_mib", static_cast<double>(m.kv_pool_mib())));
  if (m.kv_pool_mib() > 0) {
    if (!executors::EngineComputes(s->engine))
      return Status::InvalidArgument("models[0].kv_pool_mib applies to engine 'cpu' only");
    if (flags.kv_pool_mib <= 0) s->kv_pool_bytes = static_cast<uint64_t>(m.kv_pool_mib()) << 20;
  }
  SY_RETURN_IF_ERROR(FillModelShape(m, s->engine, "models[0]", s));
  for (int i = 1; i < config.models_size(); ++i) {
    driver::ServedModelSpec extra;
    SY_RETURN_IF_ERROR(FillExtraModel(config, *s, i, &extra));
    s->extra_models.push_back(std::move(extra));
  }
  return Status::OK();
}

// Tier sizes and per-tenant quotas (the scheduler's bytes).
Status FillTiers(const v1::ServiceConfig& config, driver::SchedulerConfig* s) {
  SY_RETURN_IF_ERROR(CheckNotNegative("host_bytes", static_cast<double>(config.host_bytes())));
  SY_RETURN_IF_ERROR(CheckNotNegative("disk_bytes", static_cast<double>(config.disk_bytes())));
  s->host_bytes = static_cast<uint64_t>(config.host_bytes());
  s->disk_bytes = static_cast<uint64_t>(config.disk_bytes());
  for (const auto& t : config.tenants()) {
    for (auto [v, f] : {std::pair{t.hbm_quota_bytes(), "tenants[].hbm_quota_bytes"},
                        std::pair{t.host_quota_bytes(), "tenants[].host_quota_bytes"},
                        std::pair{t.disk_quota_bytes(), "tenants[].disk_quota_bytes"}})
      SY_RETURN_IF_ERROR(CheckNotNegative(f, static_cast<double>(v)));
    if (t.hbm_quota_bytes() || t.host_quota_bytes() || t.disk_quota_bytes())
      s->tenant_quotas[t.name()] = {static_cast<uint64_t>(t.hbm_quota_bytes()),
                                    static_cast<uint64_t>(t.host_quota_bytes()),
                                    static_cast<uint64_t>(t.disk_quota_bytes())};
  }
  return Status::OK();
}

Status FillScheduler(const v1::ServiceConfig& config, const ServeFlags& flags,
                     driver::SchedulerConfig* s) {
  std::string llm = flags.llm;
  if (llm.empty()) llm = config.llm_executor().empty() ? "engine" : config.llm_executor();
  // "simulated" is the former name of "engine" (it runs on the CPU engine too), kept so
  // that existing configs still load.
  if (llm != "engine" && llm != "simulated" && llm != "reported") {
    return Status::InvalidArgument("--llm (llm_executor) must be 'engine' or 'reported', got '" +
                                   llm + "'");
  }
  s->engines_run_llm = llm != "reported";
  SY_RETURN_IF_ERROR(FillEngine(config, flags, s));
  SY_RETURN_IF_ERROR(FillModels(config, flags, s));
  SY_RETURN_IF_ERROR(FillTiers(config, s));
  SY_RETURN_IF_ERROR(CheckNotNegative("workers", config.workers()));
  SY_RETURN_IF_ERROR(CheckNotNegative("hbm_bytes_per_worker", config.hbm_bytes_per_worker()));
  if (config.workers() > 0) s->workers = config.workers();
  if (config.hbm_bytes_per_worker() > 0 && s->hbm_bytes_per_worker == 0) {
    s->hbm_bytes_per_worker = static_cast<uint64_t>(config.hbm_bytes_per_worker());
  }
  if (!config.policy().empty()) s->policy = config.policy();
  if (!flags.policy.empty()) s->policy = flags.policy;
  auto policy = scheduler::CreatePolicy(s->policy);  // refused here, naming the option
  if (!policy.ok()) return policy.status().Annotate("--policy (policy)");
  SY_RETURN_IF_ERROR(FillDisaggregation(config, flags, s));
  SY_RETURN_IF_ERROR(FillLinks(config.links(), s));
  SY_RETURN_IF_ERROR(FillLinkFile(config, flags, s));
  for (const auto& t : config.tenants()) {
    if (t.weight() > 0) s->tenant_weights[t.name()] = t.weight();
  }
  return Status::OK();
}

// "HOST:PORT" into `options` host and port, split at the last colon (so "::1:8470" is
// host ::1; the server checks the host is an IP address); `what` names the setting.
Status ParseListen(const std::string& listen, const std::string& what,
                   http::HttpServerOptions* options) {
  size_t colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return Status::InvalidArgument(what + " needs HOST:PORT, got '" + listen + "'");
  }
  std::string_view port_text = std::string_view(listen).substr(colon + 1);
  int port = -1;
  auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc() || end != port_text.data() + port_text.size() || port < 0 || port > 65535) {
    return Status::InvalidArgument(what + " port must be 0-65535, got '" + std::string(port_text) +
                                   "'");
  }
  options->host = listen.substr(0, colon);
  options->port = static_cast<uint16_t>(port);
  return Status::OK();
}

// The upstreams of proxy mode (--upstream, else the config's `upstreams`), each
// "URL[#WORD+...]" (conversation/upstream_api.h), with --upstream-api and
// --upstream-kind (config `upstreamKind`) for those that name none; and steering.
Status FillUpstreams(const v1::ServiceConfig& config, const ServeFlags& flags,
                     frontends::FrontCore::Options* fronts) {
  std::vector<std::string> specs = flags.upstreams;
  if (specs.empty()) specs.assign(config.upstreams().begin(), config.upstreams().end());
  frontends::UpstreamApi api = frontends::UpstreamApi::kSame;
  if (!flags.upstream_api.empty()) {
    auto a = conversation::ParseUpstreamApi(flags.upstream_api);
    if (!a.ok()) return a.status().Annotate("--upstream-api");
    if (specs.empty())
      return Status::InvalidArgument("--upstream-api: no upstreams (give --upstream URL)");
    api = *a;
  }
  upstream::UpstreamKind kind = upstream::UpstreamKind::kGeneric;
  const std::string kind_name =
      !flags.upstream_kind.empty() ? flags.upstream_kind : config.upstream_kind();
  if (!kind_name.empty()) {
    auto k = upstream::ParseUpstreamKind(kind_name);
    if (!k.ok()) return k.status().Annotate("--upstream-kind (upstreamKind)");
    kind = *k;
  }
  if (flags.upstream_steering == "on" || flags.upstream_steering.empty()) {
    fronts->upstream_steering =
        !flags.upstream_steering.empty() || !config.disable_upstream_steering();
  } else if (flags.upstream_steering == "off") {
    fronts->upstream_steering = false;
  } else {
    return Status::InvalidArgument("--upstream-steering: expected on or off, got '" +
                                   flags.upstream_steering + "'");
  }
  const int64_t interval = flags.upstream_load_interval_ms.value_or(
      config.upstream_load_interval_ms() == 0 ? 1000 : config.upstream_load_interval_ms());
  if (interval < 0 && flags.upstream_load_interval_ms)
    return Status::InvalidArgument("--upstream-load-interval-ms: must be >= 0, got " +
                                   std::to_string(interval));
  if (interval < -1 || interval > 3'600'000)
    return Status::InvalidArgument(
        "upstreamLoadIntervalMs: must be -1 (not read), 0 (1000) or 1..3600000 ms, got " +
        std::to_string(interval));
  fronts->upstream_load_interval_ms = interval < 0 ? 0 : static_cast<int>(interval);
  fronts->upstream_kv_events = flags.upstream_kv_events;
  if (fronts->upstream_kv_events.empty())
    fronts->upstream_kv_events.assign(config.upstream_kv_events().begin(),
                                      config.upstream_kv_events().end());
  if (fronts->upstream_kv_events.size() > specs.size())
    return Status::InvalidArgument("--upstream-kv-events (upstreamKvEvents): " +
                                   std::to_string(fronts->upstream_kv_events.size()) +
                                   " endpoints for " + std::to_string(specs.size()) +
                                   " upstreams (one per upstream, in order; \"\" for none)");
  for (size_t i = 0; i < fronts->upstream_kv_events.size(); ++i) {
    const std::string& e = fronts->upstream_kv_events[i];
    if (!e.empty() && e.rfind("tcp://", 0) != 0 && e.rfind("ipc://", 0) != 0)
      return Status::InvalidArgument("--upstream-kv-events (upstreamKvEvents[" + std::to_string(i) +
                                     "]): '" + e +
                                     "' is not a ZeroMQ endpoint (tcp://host:port or ipc://path)");
  }
  fronts->upstreams.clear();
  fronts->upstream_apis.clear();
  fronts->upstream_setups.clear();
  for (const std::string& spec : specs) {
    auto up = conversation::ParseUpstreamSpec(spec, api, kind);
    if (!up.ok()) return up.status().Annotate("--upstream (upstreams)");
    fronts->upstreams.push_back(up->url);
    fronts->upstream_apis.push_back(up->api);
    upstream::SteeringUpstream setup;
    setup.kind = up->kind;
    setup.declared = up->declared;
    fronts->upstream_setups.push_back(std::move(setup));
  }
  return Status::OK();
}

}  // namespace

Result<ServeSetup> MakeServeSetup(const v1::ServiceConfig& config, const ServeFlags& flags) {
  ServeSetup setup;
  std::string listen = flags.listen;
  if (listen.empty()) listen = config.listen().empty() ? "127.0.0.1:8470" : config.listen();
  SY_RETURN_IF_ERROR(ParseListen(listen, "--listen (listen)", &setup.http));
  SY_RETURN_IF_ERROR(FillHttp(config, &setup.http));

  setup.data_dir = flags.data_dir;
  if (setup.data_dir.empty()) {
    setup.data_dir = config.data_dir().empty() ? "var" : config.data_dir();
  }
  service::ServiceOptions& so = setup.service;
  so.data_dir = setup.data_dir;
  for (const auto& t : config.tenants()) {
    SY_RETURN_IF_ERROR(
        CheckNotNegative("tenants[].max_workflows", static_cast<double>(t.max_workflows())));
    if (t.max_workflows() > 0) so.max_live_workflows_by_tenant[t.name()] = t.max_workflows();
    SY_RETURN_IF_ERROR(CheckRateLimit(t));
  }
  so.sync_writes = !config.disable_sync();
  SY_RETURN_IF_ERROR(FillRetention(config, &so));
  if (flags.response_retention_s >= 0) so.document_retention_s = flags.response_retention_s;
  SY_RETURN_IF_ERROR(FillCommitDelay(config, &so));
  SY_RETURN_IF_ERROR(FillScheduler(config, flags, &so.scheduler));

  SY_RETURN_IF_ERROR(CheckNotNegative("max_inflight", config.max_inflight()));
  SY_RETURN_IF_ERROR(CheckNotNegative("session_idle_timeout_s",
                                      static_cast<double>(config.session_idle_timeout_s())));
  if (config.session_idle_timeout_s() > 0)
    setup.api.fronts.session_idle_timeout = std::chrono::seconds(config.session_idle_timeout_s());
  SY_RETURN_IF_ERROR(FillUpstreams(config, flags, &setup.api.fronts));
  setup.api.fronts.upstream_api_key =
      !flags.upstream_key.empty() ? flags.upstream_key : config.upstream_api_key();
  if (!setup.api.fronts.upstreams.empty()) {
    upstream::UpstreamOptions uo;
    uo.urls = setup.api.fronts.upstreams;
    auto client = upstream::UpstreamClient::Create(uo);  // checks every URL
    if (!client.ok()) return client.status().Annotate("--upstream (upstreams)");
    if (so.scheduler.engines_run_llm && (!flags.engine.empty() || !config.engine().empty() ||
                                         (!flags.llm.empty() && flags.llm != "reported")))
      return Status::InvalidArgument(
          "--upstream proxies LLM calls to the upstreams; --engine / --llm engine run them "
          "here: choose one");
    so.scheduler.engines_run_llm = false;     // the front reports the proxied calls
    so.scheduler.kv_between_workers = false;  // each upstream's KV is its own
    // One scheduler worker per upstream: the core places each call where its session's
    // context is (or the least loaded upstream), and the front forwards it there.
    if (config.workers() == 0 && (config.models_size() == 0 || config.models(0).workers() == 0))
      so.scheduler.workers = static_cast<int>(setup.api.fronts.upstreams.size());
  }
  if (config.max_inflight() > 0) setup.api.max_inflight = config.max_inflight();
  return setup;
}

}  // namespace switchyard::serve
