// `switchyard serve`'s settings: embedded defaults, config values, command-line overrides,
// and a clear error naming each bad setting.
#include "serve/serve_config.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "proto/json.h"

namespace switchyard::serve {
namespace {

v1::ServiceConfig Parse(const std::string& json) {
  v1::ServiceConfig c;
  Status st = proto::ParseJson(json, &c);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return c;
}

// The error of MakeServeSetup(config), or "" when it succeeded.
std::string ErrorOf(const std::string& json, const ServeFlags& flags = {}) {
  auto s = MakeServeSetup(Parse(json), flags);
  return s.ok() ? "" : s.status().ToString();
}

TEST(ServeConfigTest, TheCpuEngineTakesWeightAndKvStorageTypes) {
  ServeFlags f;
  f.engine = "cpu";
  f.weight_dtype = "f32";
  f.kv_dtype = "bf16";
  auto s = MakeServeSetup(v1::ServiceConfig{}, f);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->service.scheduler.cpu_weight_dtype, "f32");
  EXPECT_EQ(s->service.scheduler.cpu_kv_dtype, "bf16");
  f.kv_dtype = "fp8";
  EXPECT_EQ(MakeServeSetup(v1::ServiceConfig{}, f).status().message(),
            "--kv-dtype must be f32 or bf16, got 'fp8'");
  f.kv_dtype = "";
  f.weight_dtype = "int4";
  EXPECT_EQ(MakeServeSetup(v1::ServiceConfig{}, f).status().message(),
            "--weight-dtype must be f32 or bf16, got 'int4'");
}

TEST(ServeConfigTest, NoConfigGivesTheEmbeddedDefaults) {
  auto s = MakeServeSetup(v1::ServiceConfig{}, {});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->http.host, "127.0.0.1");
  EXPECT_EQ(s->http.port, 8470);
  EXPECT_EQ(s->http.threads, 2);
  EXPECT_EQ(s->http.body_limit_bytes, http::HttpServerOptions{}.body_limit_bytes);
  EXPECT_EQ(s->data_dir, "var");
  EXPECT_EQ(s->service.data_dir, "var");
  EXPECT_TRUE(s->service.sync_writes);
  EXPECT_TRUE(s->service.scheduler.engines_run_llm);
  EXPECT_EQ(s->service.ended_in_memory, service::ServiceOptions{}.ended_in_memory);
  EXPECT_EQ(s->service.commit_delay, std::chrono::microseconds(700));
  EXPECT_EQ(s->api.max_inflight, HttpApiOptions{}.max_inflight);
}

TEST(ServeConfigTest, TheCpuEngineServesTheDemoModelUnlessGivenOneAndTakesAPoolSize) {
  ServeFlags f;
  f.engine = "cpu";
  auto s = MakeServeSetup(v1::ServiceConfig{}, f);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->service.scheduler.model_path, "demo-qwen3-random") << "the embedded demo model";
  f.model = "configs/models/tiny-llama-4l.json";
  s = MakeServeSetup(v1::ServiceConfig{}, f);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->service.scheduler.engine, "cpu");
  EXPECT_TRUE(s->service.scheduler.engines_run_llm) << "the service runs the LLM nodes";
  EXPECT_EQ(s->service.scheduler.model_path, f.model);
  EXPECT_EQ(s->service.scheduler.kv_pool_bytes, 256ULL << 20) << "the default pool";
  f.kv_pool_mib = 8;
  EXPECT_EQ(MakeServeSetup(v1::ServiceConfig{}, f)->service.scheduler.kv_pool_bytes, 8ULL << 20);
  // From the config file; the flag wins.
  auto c = MakeServeSetup(Parse(R"({"engine": "cpu", "model": "m.json", "kvPoolMib": 16})"),
                          ServeFlags{});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->service.scheduler.model_path, "m.json");
  EXPECT_EQ(c->service.scheduler.kv_pool_bytes, 16ULL << 20);
  f = ServeFlags{};
  f.engine = "gpu";
  EXPECT_NE(MakeServeSetup(v1::ServiceConfig{}, f)
                .status()
                .message()
                .find("--engine (engine) must be 'simulated' or 'cpu', got 'gpu'"),
            std::string::npos);
  f = ServeFlags{};
  f.model = "m.json";  // the simulated engine has no model to load
  EXPECT_NE(MakeServeSetup(v1::ServiceConfig{}, f).status().message().find("--engine cpu only"),
            std::string::npos);
  f = ServeFlags{};
  f.weight_dtype = "bf16";  // nor weights to store
  EXPECT_NE(MakeServeSetup(v1::ServiceConfig{}, f).status().message().find("--engine cpu only"),
            std::string::npos);
  f = ServeFlags{};
  f.engine = "cpu";
  f.model = "m.json";
  f.llm = "reported";
  EXPECT_NE(MakeServeSetup(v1::ServiceConfig{}, f).status().message().find("choose one"),
            std::string::npos);
}

TEST(ServeConfigTest, UpstreamsMakeTheFrontAProxy) {
  ServeFlags f;
  f.upstreams = {"http://127.0.0.1:9001", "http://10.0.0.2:8000"};
  f.upstream_key = "k";
  auto s = MakeServeSetup(v1::ServiceConfig{}, f);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->api.fronts.upstreams, f.upstreams);
  EXPECT_EQ(s->api.fronts.upstream_api_key, "k");
  EXPECT_FALSE(s->service.scheduler.engines_run_llm) << "the front reports the proxied calls";
  f.upstreams = {"https://example.com"};
  auto bad = MakeServeSetup(v1::ServiceConfig{}, f);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--upstream"), std::string::npos) << bad.status();
  f.upstreams = {"http://127.0.0.1:9001"};
  f.engine = "cpu";
  f.model = "m.json";
  EXPECT_NE(MakeServeSetup(v1::ServiceConfig{}, f).status().message().find("choose one"),
            std::string::npos);
}

// How often the upstreams' /metrics are read: 1000 ms by default, the flag over the config,
// 0 (flag) or -1 (config) for never; a value out of range is named.
TEST(ServeConfigTest, UpstreamLoadIntervalComesFromTheFlagOrTheConfig) {
  ServeFlags f;
  f.upstreams = {"http://127.0.0.1:9001"};
  v1::ServiceConfig c;
  EXPECT_EQ(MakeServeSetup(c, f)->api.fronts.upstream_load_interval_ms, 1000);
  c.set_upstream_load_interval_ms(250);
  EXPECT_EQ(MakeServeSetup(c, f)->api.fronts.upstream_load_interval_ms, 250);
  c.set_upstream_load_interval_ms(-1);
  EXPECT_EQ(MakeServeSetup(c, f)->api.fronts.upstream_load_interval_ms, 0);
  f.upstream_load_interval_ms = 50;
  EXPECT_EQ(MakeServeSetup(c, f)->api.fronts.upstream_load_interval_ms, 50);
  f.upstream_load_interval_ms = 0;
  EXPECT_EQ(MakeServeSetup(c, f)->api.fronts.upstream_load_interval_ms, 0);
  f.upstream_load_interval_ms.reset();
  c.set_upstream_load_interval_ms(-5);
  auto bad = MakeServeSetup(c, f);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "upstreamLoadIntervalMs: must be -1 (not read), 0 (1000) or 1..3600000 ms, got -5");
}

// Each upstream's KV event endpoint, in order; more endpoints than upstreams, or one that is
// not a ZeroMQ endpoint, is refused by name.
TEST(ServeConfigTest, UpstreamKvEventEndpointsComeFromTheFlagOrTheConfig) {
  ServeFlags f;
  f.upstreams = {"http://127.0.0.1:9001", "http://127.0.0.1:9002"};
  v1::ServiceConfig c;
  c.add_upstream_kv_events("tcp://10.0.0.1:5557");
  EXPECT_EQ(MakeServeSetup(c, f)->api.fronts.upstream_kv_events,
            std::vector<std::string>{"tcp://10.0.0.1:5557"});
  f.upstream_kv_events = {"", "tcp://10.0.0.2:5557"};
  EXPECT_EQ(MakeServeSetup(c, f)->api.fronts.upstream_kv_events, f.upstream_kv_events);
  f.upstream_kv_events = {"", "http://10.0.0.2:5557"};
  EXPECT_EQ(MakeServeSetup(c, f).status().message(),
            "--upstream-kv-events (upstreamKvEvents[1]): 'http://10.0.0.2:5557' is not a ZeroMQ "
            "endpoint (tcp://host:port or ipc://path)");
  f.upstream_kv_events = {"", "", "tcp://x:1"};
  EXPECT_EQ(MakeServeSetup(c, f).status().message(),
            "--upstream-kv-events (upstreamKvEvents): 3 endpoints for 2 upstreams (one per "
            "upstream, in order; \"\" for none)");
}

// Steering: each upstream's kind and declared capabilities (URL words, else --upstream-kind
// or the config's upstreamKind), --upstream-steering, one scheduler worker per upstream.
TEST(ServeConfigTest, UpstreamKindsCapabilitiesAndSteering) {
  ServeFlags f;
  f.upstreams = {"http://127.0.0.1:9001#vllm+priority",
                 "http://127.0.0.1:9002#chat+llamacpp+slots=2", "http://127.0.0.1:9003"};
  f.upstream_kind = "sglang";
  auto s = MakeServeSetup(v1::ServiceConfig{}, f);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  const auto& fr = s->api.fronts;
  ASSERT_EQ(fr.upstream_setups.size(), 3u);
  EXPECT_EQ(fr.upstream_setups[0].kind, upstream::UpstreamKind::kVllm);
  EXPECT_TRUE(fr.upstream_setups[0].declared.priority.on);
  EXPECT_EQ(fr.upstream_setups[0].declared.priority.source, "configured");
  EXPECT_EQ(fr.upstream_setups[1].kind, upstream::UpstreamKind::kLlamaCpp);
  EXPECT_EQ(fr.upstream_apis[1], frontends::UpstreamApi::kChat);
  EXPECT_EQ(fr.upstream_setups[1].declared.total_slots, 2);
  EXPECT_EQ(fr.upstream_setups[2].kind, upstream::UpstreamKind::kSglang) << "--upstream-kind";
  EXPECT_EQ(fr.upstreams[0], "http://127.0.0.1:9001");
  EXPECT_TRUE(fr.upstream_steering) << "on by default";
  EXPECT_EQ(s->service.scheduler.workers, 3) << "one scheduler worker per upstream";

  f.upstream_steering = "off";
  s = MakeServeSetup(Parse(R"({"upstreamKind": "vllm"})"), f);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_FALSE(s->api.fronts.upstream_steering);
  f.upstream_kind.clear();
  f.upstream_steering.clear();
  s = MakeServeSetup(Parse(R"({"upstreamKind": "vllm", "disableUpstreamSteering": true})"), f);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->api.fronts.upstream_setups[2].kind, upstream::UpstreamKind::kVllm);
  EXPECT_FALSE(s->api.fronts.upstream_steering);

  auto error = [&](ServeFlags g) {
    auto r = MakeServeSetup(v1::ServiceConfig{}, g);
    return r.ok() ? std::string("ok") : r.status().message();
  };
  ServeFlags g = f;
  g.upstream_steering = "maybe";
  EXPECT_NE(error(g).find("--upstream-steering: expected on or off, got 'maybe'"),
            std::string::npos)
      << error(g);
  g = f;
  g.upstream_kind = "tgi";
  EXPECT_NE(error(g).find("--upstream-kind"), std::string::npos) << error(g);
  g = f;
  g.upstreams = {"http://127.0.0.1:9001#vllm+fast"};
  EXPECT_NE(error(g).find("'fast' is neither an API"), std::string::npos) << error(g);
  g.upstreams = {"http://127.0.0.1:9001#vllm+sglang"};
  EXPECT_NE(error(g).find("a second kind 'sglang'"), std::string::npos) << error(g);
  g.upstreams = {"http://127.0.0.1:9001#llamacpp+slots=0"};
  EXPECT_NE(error(g).find("slots=N wants N in 1..4096"), std::string::npos) << error(g);
}

TEST(ServeConfigTest, ConfigValuesAreApplied) {
  auto s = MakeServeSetup(Parse(R"({"listen": "0.0.0.0:9000", "dataDir": "/tmp/sy",
      "threads": 4, "bodyLimitBytes": 4096, "maxInflight": 64, "disableSync": true,
      "llmExecutor": "reported", "workers": 3, "hbmBytesPerWorker": 1048576,
      "policy": "vllm-fcfs", "endedInMemory": -1, "endedRetentionS": 60,
      "idempotencyRetentionS": 30, "commitDelayUs": 250, "links": {"pcieBytesPerS": 2e10, "pcieLatencyUs": 5},
      "tenants": [{"name": "a", "token": "tok-a-0123456789abcdef", "weight": 2,
                   "maxWorkflows": 7}]})"),
                          {});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->http.host, "0.0.0.0");
  EXPECT_EQ(s->http.port, 9000);
  EXPECT_EQ(s->http.threads, 4);
  EXPECT_EQ(s->http.body_limit_bytes, 4096u);
  EXPECT_EQ(s->api.max_inflight, 64);
  EXPECT_EQ(s->data_dir, "/tmp/sy");
  EXPECT_FALSE(s->service.sync_writes);
  EXPECT_FALSE(s->service.scheduler.engines_run_llm);
  EXPECT_EQ(s->service.scheduler.workers, 3);
  EXPECT_EQ(s->service.scheduler.hbm_bytes_per_worker, 1048576u);
  EXPECT_EQ(s->service.scheduler.policy, "vllm-fcfs");
  EXPECT_EQ(s->service.ended_in_memory, 0u);  // -1: archive as soon as it ends
  EXPECT_EQ(s->service.ended_retention_s, 60);
  EXPECT_EQ(s->service.idempotency_retention_s, 30);
  EXPECT_EQ(s->service.commit_delay, std::chrono::microseconds(250));
  EXPECT_DOUBLE_EQ(s->service.scheduler.pcie_bytes_per_s, 2e10);
  EXPECT_DOUBLE_EQ(s->service.scheduler.pcie_latency_s, 5e-6);
  EXPECT_DOUBLE_EQ(s->service.scheduler.tenant_weights.at("a"), 2);
  EXPECT_EQ(s->service.max_live_workflows_by_tenant.at("a"), 7);
}

// The models section: the served id and aliases, the simulated engine's model and GPU from
// files (the shipped configs) or inline, and clear errors for what cannot be served.
TEST(ServeConfigTest, TheModelsSectionNamesAndPricesTheServedModel) {
  const std::string src = SY_SOURCE_DIR;
  auto s = MakeServeSetup(Parse(R"({"models": [{"id": "llama-70b", "aliases": ["big"],
      "modelFile": ")" + src + R"(/configs/models/llama-3.1-70b.json",
      "gpuFile": ")" + src + R"(/configs/gpus/h200.json"}]})"),
                          {});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  const driver::SchedulerConfig& c = s->service.scheduler;
  EXPECT_EQ(c.model_id, "llama-70b");
  EXPECT_EQ(c.model_aliases, std::vector<std::string>{"big"});
  ASSERT_TRUE(c.model_config && c.gpu);
  EXPECT_EQ(c.model_config->num_layers(), 80u);
  EXPECT_NE(c.gpu->name().find("H200"), std::string::npos) << c.gpu->name();
  auto inline_model = MakeServeSetup(
      Parse(R"({"models": [{"id": "m", "model": {"name": "x", "numLayers": 2}}]})"), {});
  ASSERT_TRUE(inline_model.ok()) << inline_model.status().ToString();
  EXPECT_EQ(inline_model->service.scheduler.model_config->num_layers(), 2u);
  // Several models: each after the first on its own workers, names unique across them.
  auto two = MakeServeSetup(Parse(R"({"workers": 2, "models": [{"id": "a"},
      {"id": "b", "aliases": ["bee"], "workers": 3, "hbmBytesPerWorker": "4096",
       "model": {"name": "y", "numLayers": 4}}]})"),
                            {});
  ASSERT_TRUE(two.ok()) << two.status().ToString();
  EXPECT_EQ(two->service.scheduler.workers, 2);
  ASSERT_EQ(two->service.scheduler.extra_models.size(), 1u);
  const driver::ServedModelSpec& b = two->service.scheduler.extra_models[0];
  EXPECT_EQ(b.id, "b");
  EXPECT_EQ(b.aliases, std::vector<std::string>{"bee"});
  EXPECT_EQ(b.workers, 3);
  EXPECT_EQ(b.hbm_bytes_per_worker, 4096u);
  EXPECT_EQ(b.engine, "simulated");
  ASSERT_TRUE(b.model_config);
  EXPECT_EQ(b.model_config->num_layers(), 4u);
  EXPECT_NE(ErrorOf(R"({"models": [{"id": "a"}, {"id": "b", "aliases": ["a"]}]})")
                .find("models[1].aliases[0]: 'a' is repeated (also models[0])"),
            std::string::npos);
  EXPECT_NE(ErrorOf(R"({"models": [{"id": "a"}, {"aliases": ["x"]}]})").find("models[1].id is"),
            std::string::npos);
  EXPECT_NE(ErrorOf(R"({"workers": 2, "models": [{"id": "a", "workers": 3}]})").find("disagree"),
            std::string::npos);
  EXPECT_NE(ErrorOf(R"({"models": [{"id": "a"}, {"id": "b", "engine": "cpu"}]})")
                .find("models[1]: engine 'cpu' needs models[1].checkpoint"),
            std::string::npos);
  EXPECT_NE(
      ErrorOf(R"({"models": [{"id": "a"}, {"id": "b", "workers": -1}]})").find("models[1].workers"),
      std::string::npos);
  EXPECT_NE(
      ErrorOf(R"({"models": [{"id": "a", "modelFile": "/no/such.json"}]})").find("/no/such.json"),
      std::string::npos);
  EXPECT_NE(ErrorOf(R"({"models": [{"id": "a", "modelFile": "f", "model": {"numLayers": 1}}]})")
                .find("both set"),
            std::string::npos);
  EXPECT_NE(ErrorOf(R"({"models": [{"id": "a", "aliases": ["a"]}]})").find("repeated"),
            std::string::npos);
  EXPECT_NE(ErrorOf(R"({"models": [{"id": "a", "engine": "cpu", "checkpoint": "c.json",
                       "gpuFile": "g.json"}]})")
                .find("engine 'cpu' takes its shape"),
            std::string::npos);
  // engine "cpu" from the models entry: its checkpoint is the model path.
  auto cpu = MakeServeSetup(
      Parse(R"({"models": [{"id": "tiny", "engine": "cpu", "checkpoint": "t.json"}]})"), {});
  ASSERT_TRUE(cpu.ok()) << cpu.status().ToString();
  EXPECT_EQ(cpu->service.scheduler.engine, "cpu");
  EXPECT_EQ(cpu->service.scheduler.model_path, "t.json");
}

// Tier sizes and per-tenant quotas come from the config; nothing is taken from the machine.
TEST(ServeConfigTest, TierSizesAndTenantQuotasAreExplicit) {
  auto d = MakeServeSetup(v1::ServiceConfig{}, {});
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->service.scheduler.hbm_bytes_per_worker, 0u) << "0: from the GPU and model";
  EXPECT_EQ(d->service.scheduler.host_bytes, 0u) << "0: driver::SchedulerConfig::kDefaultHostBytes";
  auto s = MakeServeSetup(Parse(R"({"hostBytes": "1000", "diskBytes": "2000", "tenants": [
      {"name": "a", "token": "tok-a-0123456789abcdef", "hostQuotaBytes": "300",
       "diskQuotaBytes": "400", "hbmQuotaBytes": "500"}]})"),
                          {});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  const driver::SchedulerConfig& c = s->service.scheduler;
  EXPECT_EQ(c.host_bytes, 1000u);
  EXPECT_EQ(c.disk_bytes, 2000u);
  ASSERT_TRUE(c.tenant_quotas.count("a"));
  EXPECT_EQ(c.tenant_quotas.at("a").host, 300u);
  EXPECT_EQ(c.tenant_quotas.at("a").disk, 400u);
  EXPECT_EQ(c.tenant_quotas.at("a").hbm, 500u);
  EXPECT_NE(ErrorOf(R"({"hostBytes": "-1"})").find("host_bytes"), std::string::npos);
  EXPECT_NE(ErrorOf(R"({"tenants": [{"name": "a", "diskQuotaBytes": "-5"}]})")
                .find("tenants[].disk_quota_bytes"),
            std::string::npos);
}

// A tenant's rate and bucket depth: negative values, and a depth under one request (which
// could never admit one), stop serve naming the field; 0 is the default.
TEST(ServeConfigTest, TenantRateAndBurstAreChecked) {
  EXPECT_EQ(ErrorOf(R"({"tenants": [{"name": "a", "rateLimitPerS": 0.25}]})"), "")
      << "a slow rate with the default depth is fine (the limiter makes the depth 1)";
  EXPECT_EQ(ErrorOf(R"({"tenants": [{"name": "a", "rateLimitPerS": 5, "rateBurst": 1}]})"), "");
  std::string e = ErrorOf(R"({"tenants": [{"name": "a", "rateLimitPerS": -1}]})");
  EXPECT_NE(e.find("tenants[].rate_limit_per_s must be 0 or more, got -1"), std::string::npos) << e;
  e = ErrorOf(R"({"tenants": [{"name": "a", "rateBurst": -2}]})");
  EXPECT_NE(e.find("tenants[].rate_burst must be 0 or more, got -2"), std::string::npos) << e;
  e = ErrorOf(R"({"tenants": [{"name": "a", "rateLimitPerS": 0.2, "rateBurst": 0.5}]})");
  EXPECT_NE(e.find("tenants[].rate_burst must be 0 (twice the rate) or at least 1"),
            std::string::npos)
      << e;
}

TEST(ServeConfigTest, CommitDelayMinusOneCommitsAtOnce) {
  auto s = MakeServeSetup(Parse(R"({"commitDelayUs": -1})"), {});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->service.commit_delay.count(), 0);
}

TEST(ServeConfigTest, FlagsOverrideTheConfig) {
  ServeFlags f;
  f.listen = "127.0.0.1:0";
  f.data_dir = "elsewhere";
  f.llm = "simulated";
  auto s = MakeServeSetup(
      Parse(R"({"listen": "0.0.0.0:9000", "dataDir": "/tmp/sy", "llmExecutor": "reported"})"), f);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->http.port, 0);  // any free port
  EXPECT_EQ(s->data_dir, "elsewhere");
  EXPECT_EQ(s->service.data_dir, "elsewhere");
  EXPECT_TRUE(s->service.scheduler.engines_run_llm);
}

TEST(ServeConfigTest, PrefixCachingIsOnUnlessTurnedOffForTheCpuEngine) {
  ServeFlags f;
  f.engine = "cpu";
  auto s = MakeServeSetup(v1::ServiceConfig{}, f);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_TRUE(s->service.scheduler.cpu_prefix_caching);
  f.prefix_caching = "off";
  s = MakeServeSetup(v1::ServiceConfig{}, f);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_FALSE(s->service.scheduler.cpu_prefix_caching);
  f.kv_offload_mib = 16;  // the offload tier holds the prefix cache's blocks
  EXPECT_NE(ErrorOf("{}", f).find("--kv-offload-mib needs --prefix-caching on"), std::string::npos);
  f.kv_offload_mib = 0;
  f.prefix_caching = "maybe";
  EXPECT_NE(ErrorOf("{}", f).find("--prefix-caching: expected on or off, got 'maybe'"),
            std::string::npos);
  ServeFlags simulated;
  simulated.prefix_caching = "off";
  EXPECT_NE(ErrorOf("{}", simulated).find("apply to --engine cpu only"), std::string::npos);
}

TEST(ServeConfigTest, AStepTablePricesTheSimulatedOrProxiedModel) {
  auto s = MakeServeSetup(Parse(R"({"models": [{"stepTable": "tables/upstream.csv"}]})"), {});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->service.scheduler.step_table, "tables/upstream.csv");
  ServeFlags cpu;
  cpu.engine = "cpu";
  const std::string e = ErrorOf(R"({"models": [{"stepTable": "t.csv"}]})", cpu);
  EXPECT_NE(e.find("models[0]: model/modelFile/gpu/gpuFile/stepTable price the simulated"),
            std::string::npos)
      << e;
}

TEST(ServeConfigTest, ThePolicyComesFromTheFlagOrTheConfigAndABadOneIsNamed) {
  auto s = MakeServeSetup(Parse(R"({"policy": "kvflow"})"), {});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->service.scheduler.policy, "kvflow");
  ServeFlags f;
  f.policy = "vllm-fcfs";  // the flag wins over the config
  s = MakeServeSetup(Parse(R"({"policy": "kvflow"})"), f);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->service.scheduler.policy, "vllm-fcfs");
  f.policy = "lru-magic";
  std::string e = ErrorOf("{}", f);
  EXPECT_NE(e.find("--policy (policy)"), std::string::npos) << e;
  EXPECT_NE(e.find("lru-magic"), std::string::npos) << e;
}

TEST(ServeConfigTest, DisaggregationAndWorkerRolesComeFromTheFlagsOrTheConfig) {
  auto s = MakeServeSetup(
      Parse(R"({"disaggregation": "auto", "workerRoles": ["prefill", "decode", ""]})"), {});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->service.scheduler.disaggregation, scheduler::Disaggregation::kAuto);
  using scheduler::WorkerRole;
  EXPECT_EQ(
      s->service.scheduler.worker_roles,
      (std::vector<WorkerRole>{WorkerRole::kPrefill, WorkerRole::kDecode, WorkerRole::kMixed}));
  ServeFlags f;
  f.disaggregation = "always";  // the flags win
  f.worker_roles = {"decode"};
  s = MakeServeSetup(Parse(R"({"disaggregation": "auto", "workerRoles": ["prefill"]})"), f);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->service.scheduler.disaggregation, scheduler::Disaggregation::kAlways);
  EXPECT_EQ(s->service.scheduler.worker_roles, std::vector<WorkerRole>{WorkerRole::kDecode});
  f = {};
  f.disaggregation = "sometimes";
  std::string e = ErrorOf("{}", f);
  EXPECT_NE(e.find("--disaggregation (disaggregation)"), std::string::npos) << e;
  EXPECT_NE(e.find("sometimes"), std::string::npos) << e;
  e = ErrorOf(R"({"workerRoles": ["prefill", "verifier"]})", {});
  EXPECT_NE(e.find("workerRoles[1]"), std::string::npos) << e;
  EXPECT_NE(e.find("verifier"), std::string::npos) << e;
}

TEST(ServeConfigTest, BadListenAddressesNameTheSetting) {
  for (const char* bad : {"localhost", ":8470", "127.0.0.1:", "127.0.0.1:http", "127.0.0.1:65536",
                          "127.0.0.1:-1", "127.0.0.1:80x"}) {
    ServeFlags f;
    f.listen = bad;
    std::string e = ErrorOf("{}", f);
    EXPECT_NE(e.find("--listen (listen)"), std::string::npos) << bad << ": " << e;
    EXPECT_NE(e.find("InvalidArgument"), std::string::npos) << bad << ": " << e;
  }
  EXPECT_NE(ErrorOf(R"({"listen": "127.0.0.1:99999"})").find("got '99999'"), std::string::npos);
}

TEST(ServeConfigTest, BadValuesNameTheSettingAndTheValue) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"threads": -2})", "threads must be 0 or more, got -2"},
      {R"({"bodyLimitBytes": -1})", "body_limit_bytes must be 0 or more, got -1"},
      {R"({"maxInflight": -5})", "max_inflight must be 0 or more, got -5"},
      {R"({"workers": -1})", "workers must be 0 or more, got -1"},
      {R"({"hbmBytesPerWorker": -4096})", "hbm_bytes_per_worker must be 0 or more, got -4096"},
      {R"({"endedInMemory": -2})", "ended_in_memory must be -1, 0 or more, got -2"},
      {R"({"endedRetentionS": -1})", "ended_retention_s must be 0 or more, got -1"},
      {R"({"idempotencyRetentionS": -7})", "idempotency_retention_s must be 0 or more, got -7"},
      {R"({"commitDelayUs": -2})", "commit_delay_us must be -1, 0 or more, got -2"},
      {R"({"links": {"diskLatencyUs": -3}})", "links.disk_latency_us must be 0 or more, got -3"},
      {R"({"links": {"nvlinkBytesPerS": -1.5}})", "links.nvlink_bytes_per_s must be 0 or more"},
      {R"({"llmExecutor": "vllm"})",
       "--llm (llm_executor) must be 'engine' or 'reported', got 'vllm'"},
  };
  for (const auto& [json, want] : cases) {
    std::string e = ErrorOf(json);
    EXPECT_NE(e.find(want), std::string::npos) << json << " gave: " << e;
  }
  ServeFlags f;
  f.llm = "gpu";
  EXPECT_NE(ErrorOf("{}", f).find("got 'gpu'"), std::string::npos);
}

// --links FILE (config linksFile) loads a link file into the scheduler's config; the flag
// wins; a malformed file is refused naming the setting, the file and the field.
TEST(ServeConfigTest, ALinkFileIsLoadedFromTheFlagOrTheConfig) {
  std::string dir = ::testing::TempDir() + "/sy_serve_links_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  auto write = [&](const std::string& name, const std::string& link) {
    std::string path = dir + "/" + name;
    std::ofstream(path) << R"({"links": [{"link": ")" << link
                        << R"(", "calibration": {"alphaS": 2e-05, "betaSPerByte": 1e-10}}]})";
    return path;
  };
  std::string from_config = write("config.json", "disk0"), from_flag = write("flag.json", "pcie0");
  auto c = MakeServeSetup(Parse(R"({"linksFile": ")" + from_config + R"("})"), {});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->service.scheduler.link_file_path, from_config);
  ASSERT_EQ(c->service.scheduler.link_file.links_size(), 1);
  EXPECT_EQ(c->service.scheduler.link_file.links(0).link(), "disk0");
  EXPECT_DOUBLE_EQ(c->service.scheduler.link_file.links(0).calibration().alpha_s(), 2e-5);
  ServeFlags f;
  f.links = from_flag;
  auto w = MakeServeSetup(Parse(R"({"linksFile": ")" + from_config + R"("})"), f);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ(w->service.scheduler.link_file_path, from_flag);
  EXPECT_EQ(w->service.scheduler.link_file.links(0).link(), "pcie0");
  EXPECT_TRUE(MakeServeSetup(v1::ServiceConfig{}, {})->service.scheduler.link_file_path.empty());

  std::string bad = dir + "/bad.json";
  std::ofstream(bad) << R"({"links": [{"link": "pcie0", "calibration": {"betaSPerByte": -1}}]})";
  f.links = bad;
  std::string e = ErrorOf("{}", f);
  EXPECT_NE(e.find("--links (linksFile)"), std::string::npos) << e;
  EXPECT_NE(e.find(bad + ": links[0].calibration.betaSPerByte must be > 0"), std::string::npos)
      << e;
  f.links = dir + "/absent.json";
  EXPECT_NE(ErrorOf("{}", f).find("absent.json"), std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace switchyard::serve
