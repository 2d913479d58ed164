// Tests of adapter.h's values and registry, and of each adapter's ReadProbe on answers
// that do not advertise a capability (pure: no server).
#include "upstream/adapter.h"

#include <gtest/gtest.h>

#include "tests/upstream/recording_upstream.h"

namespace switchyard::upstream {
namespace {

std::unique_ptr<UpstreamAdapter> Make(UpstreamKind kind) {
  auto adapter = AdapterRegistry::Global().Create(kind);
  EXPECT_TRUE(adapter.ok()) << adapter.status().ToString();
  return adapter.ok() ? std::move(adapter).value() : nullptr;
}

TEST(AdapterTest, KindsParseAndName) {
  for (const char* name : {"generic", "vllm", "sglang", "llamacpp"}) {
    auto kind = ParseUpstreamKind(name);
    ASSERT_TRUE(kind.ok()) << name;
    EXPECT_EQ(UpstreamKindName(*kind), name);
    EXPECT_EQ(Make(*kind)->kind(), *kind);
  }
  auto bad = ParseUpstreamKind("tgi");
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(bad.status().IsInvalidArgument());
  EXPECT_EQ(bad.status().message(),
            "upstream kind \"tgi\" is not one of generic|vllm|sglang|llamacpp");
}

TEST(AdapterTest, RegistryRefusesASecondFactory) {
  AdapterRegistry registry;
  auto factory = [](const AdapterOptions&) -> std::unique_ptr<UpstreamAdapter> { return nullptr; };
  EXPECT_TRUE(registry.Register(UpstreamKind::kVllm, factory).ok());
  EXPECT_EQ(registry.Register(UpstreamKind::kVllm, factory).code(), StatusCode::kAlreadyExists);
  auto missing = registry.Create(UpstreamKind::kSglang);
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(missing.status().IsNotFound());
  EXPECT_NE(missing.status().message().find("sglang"), std::string::npos);
}

TEST(AdapterTest, DeclaredCapabilitiesOverrideTheProbeEitherWay) {
  Capabilities probed;
  probed.prefix_caching = {true, "GET /props total_slots=2"};
  probed.slots = {true, "GET /props total_slots=2"};
  probed.total_slots = 2;
  Capabilities declared;
  declared.prefix_caching = {false, "configured"};  // the operator turns it off
  declared.slot_files = {true, "configured"};
  Capabilities caps = ApplyDeclared(probed, declared);
  EXPECT_FALSE(caps.prefix_caching.on);
  EXPECT_EQ(caps.prefix_caching.source, "configured");
  EXPECT_TRUE(caps.slots.on);  // not declared: the probe's
  EXPECT_TRUE(caps.slot_files.on);
  EXPECT_EQ(caps.total_slots, 2);
  EXPECT_FALSE(caps.priority.on);

  nlohmann::json j = CapabilitiesToJson(caps);
  EXPECT_EQ(j["slot_files"], nlohmann::json({{"on", true}, {"source", "configured"}}));
  EXPECT_EQ(j["total_slots"], 2);
  EXPECT_EQ(j["session_id"], nlohmann::json({{"on", false}, {"source", ""}}));
}

TEST(AdapterTest, VllmProbeWithoutTheCapabilities) {
  auto vllm = Make(UpstreamKind::kVllm);
  const std::vector<std::vector<ProbeAnswer>> answers = {
      {},                                                        // unreachable
      {{"/metrics", 404, ""}},                                   // no metrics
      {{"/metrics", 200, testing::VllmMetrics(false, "None")}},  // both off
      {{"/metrics", 200, "vllm:cache_config_info_total 1\n"}},   // another metric
      {{"/metrics", 500, testing::VllmMetrics(true, "16")}},     // an error answer
      {{"/metrics", 200, "# vllm:cache_config_info{enable_prefix_caching=\"True\"}\n"}},
  };
  for (size_t i = 0; i < answers.size(); ++i) {
    Capabilities caps = vllm->ReadProbe(answers[i]);
    EXPECT_FALSE(caps.prefix_caching.on) << i;
    EXPECT_FALSE(caps.kv_transfer_params.on) << i;
  }
}

TEST(AdapterTest, SglangProbeWithoutTheCapabilities) {
  auto sglang = Make(UpstreamKind::kSglang);
  for (const char* body : {"", "not json", "[]", R"({"disable_radix_cache":"false"})",
                           R"({"disable_radix_cache":true,"enable_priority_scheduling":false,
                               "enable_session_radix_cache":false})"}) {
    Capabilities caps = sglang->ReadProbe({{"/get_server_info", 200, body}});
    EXPECT_FALSE(caps.prefix_caching.on) << body;
    EXPECT_FALSE(caps.priority.on) << body;
    EXPECT_FALSE(caps.session_id.on) << body;
    EXPECT_FALSE(caps.close_session.on) << body;
  }
}

TEST(AdapterTest, LlamaCppProbeWithoutSlots) {
  auto llama = Make(UpstreamKind::kLlamaCpp);
  for (const auto& answers : std::vector<std::vector<ProbeAnswer>>{
           {},
           {{"/props", 200, R"({"total_slots":0})"}, {"/slots", 501, "[]"}},
           {{"/props", 200, R"({"total_slots":"4"})"}},
           {{"/slots", 200, "[]"}}}) {
    Capabilities caps = llama->ReadProbe(answers);
    EXPECT_FALSE(caps.slots.on);
    EXPECT_FALSE(caps.prefix_caching.on);
    EXPECT_EQ(caps.total_slots, 0);
  }
}

TEST(AdapterTest, GenericProbesNothing) {
  auto generic = Make(UpstreamKind::kGeneric);
  EXPECT_TRUE(generic->ProbeRequests().empty());
  Capabilities caps;
  caps.prefix_caching = {true, "configured"};
  nlohmann::json body = {{"model", "m"}};
  std::map<std::string, std::string> headers;
  generic->Decorate(caps, {"s", 0, 3}, KvAction::kDiscard, 5, &body, &headers);
  EXPECT_EQ(body, nlohmann::json({{"model", "m"}}));
  EXPECT_TRUE(headers.empty());
  EXPECT_TRUE(generic->OnWait(caps, {"s", 0, 3}, KvAction::kDemote).empty());
  EXPECT_TRUE(generic->OnRelease(caps, {"s", 0, 3}).empty());
}

}  // namespace
}  // namespace switchyard::upstream
