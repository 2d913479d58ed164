#include "net_budget/topology.h"

#include <gtest/gtest.h>

#include "proto/json.h"

namespace switchyard::net_budget {
namespace {

// Parses JSON into the schema and builds the topology.
Result<Topology> Build(const std::string& json) {
  v1::Topology p;
  Status st = proto::ParseJson(json, &p);
  if (!st.ok()) return st;
  return Topology::FromProto(p);
}

std::string Error(const std::string& json) {
  auto t = Build(json);
  return t.ok() ? "OK" : t.status().message();
}

const char* kDevices = R"("devices": [
  {"id": "a", "kind": "DEVICE_GPU"}, {"id": "b", "kind": "DEVICE_CPU"}])";

std::string WithLink(const std::string& link) {
  return std::string("{") + kDevices + R"(, "links": [)" + link + "]}";
}

TEST(TopologyTest, BuildsValidGraph) {
  auto t = Build(WithLink(
      R"({"id": "l", "src": "a", "dst": "b", "kind": "LINK_PCIE", "bandwidthBytesPerS": 5e10,
          "latencyUs": 2, "duplex": true})"));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->num_devices(), 2u);
  EXPECT_EQ(t->num_links(), 1u);
  const Link& l = t->link(0);
  EXPECT_EQ(*l.bandwidth_bytes_per_s, 5e10);
  EXPECT_DOUBLE_EQ(*l.latency_s, 2e-6);
  EXPECT_EQ(l.source, Source::kConfigured);
  auto m = l.Model();
  ASSERT_TRUE(m.ok());
  EXPECT_DOUBLE_EQ(m->alpha_s, 2e-6);
  EXPECT_DOUBLE_EQ(m->bandwidth(), 5e10);
  EXPECT_EQ(t->out_hops(0).size(), 1u);
  EXPECT_EQ(t->out_hops(1).size(), 1u);  // duplex: reachable both ways
  EXPECT_TRUE(t->out_hops(1)[0].reverse);
}

TEST(TopologyTest, RejectsBadConfigsWithClearErrors) {
  EXPECT_EQ(
      Error(
          R"({"devices": [{"id": "a", "kind": "DEVICE_GPU"}, {"id": "a", "kind": "DEVICE_CPU"}]})"),
      "device 'a': duplicate id");
  EXPECT_EQ(Error(R"({"devices": [{"kind": "DEVICE_GPU"}]})"), "device #0: missing field id");
  EXPECT_EQ(Error(R"({"devices": [{"id": "a"}]})"), "device 'a': missing field kind");
  EXPECT_EQ(
      Error(
          R"({"hosts": [{"id": "h0"}], "devices": [{"id": "a", "kind": "DEVICE_GPU", "host": "h9"}]})"),
      "device 'a': field host names unknown host 'h9'");
  EXPECT_EQ(Error(R"({"hosts": [{"id": "h0"}, {"id": "h0"}]})"), "host 'h0': duplicate id");
  EXPECT_EQ(Error(WithLink(R"({"src": "a", "dst": "b", "kind": "LINK_PCIE"})")),
            "link #0: missing field id");
  EXPECT_EQ(
      Error(WithLink(
          R"({"id": "l", "src": "a", "dst": "zz", "kind": "LINK_PCIE", "bandwidthBytesPerS": 1, "latencyUs": 1})")),
      "link 'l': field dst names unknown device 'zz'");
  EXPECT_EQ(Error(WithLink(R"({"id": "l", "src": "x", "dst": "b", "kind": "LINK_PCIE"})")),
            "link 'l': field src names unknown device 'x'");
  EXPECT_EQ(Error(WithLink(R"({"id": "l", "dst": "b", "kind": "LINK_PCIE"})")),
            "link 'l': missing field src");
  EXPECT_EQ(Error(WithLink(R"({"id": "l", "src": "a", "kind": "LINK_PCIE"})")),
            "link 'l': missing field dst");
  EXPECT_EQ(
      Error(WithLink(
          R"({"id": "l", "src": "a", "dst": "a", "kind": "LINK_PCIE", "bandwidthBytesPerS": 1, "latencyUs": 1})")),
      "link 'l': self-link (src and dst are both 'a')");
  EXPECT_EQ(Error(WithLink(
                R"({"id": "l", "src": "a", "dst": "b", "bandwidthBytesPerS": 1, "latencyUs": 1})")),
            "link 'l': missing field kind");
  EXPECT_EQ(
      Error(WithLink(
          R"({"id": "l", "src": "a", "dst": "b", "kind": "LINK_PCIE", "bandwidthBytesPerS": -5, "latencyUs": 1})")),
      "link 'l': field bandwidth_bytes_per_s must be > 0, got -5");
  EXPECT_EQ(
      Error(WithLink(
          R"({"id": "l", "src": "a", "dst": "b", "kind": "LINK_PCIE", "bandwidthBytesPerS": 0, "latencyUs": 1})")),
      "link 'l': field bandwidth_bytes_per_s must be > 0, got 0");
  EXPECT_EQ(
      Error(WithLink(
          R"({"id": "l", "src": "a", "dst": "b", "kind": "LINK_PCIE", "bandwidthBytesPerS": 1, "latencyUs": -1})")),
      "link 'l': field latency_us must be >= 0, got -1");
  EXPECT_EQ(Error(WithLink(
                R"({"id": "l", "src": "a", "dst": "b", "kind": "LINK_PCIE", "latencyUs": 1})")),
            "link 'l': missing field bandwidth_bytes_per_s (configure it, calibrate the link, or "
            "set unknown_bandwidth: true)");
  EXPECT_EQ(
      Error(WithLink(
          R"({"id": "l", "src": "a", "dst": "b", "kind": "LINK_PCIE", "bandwidthBytesPerS": 1})")),
      "link 'l': missing field latency_us (configure it, calibrate the link, or set "
      "unknown_latency: true)");
  EXPECT_EQ(
      Error(WithLink(
          R"({"id": "l", "src": "a", "dst": "b", "kind": "LINK_PCIE", "bandwidthBytesPerS": 1, "unknownBandwidth": true, "latencyUs": 1})")),
      "link 'l': both bandwidth_bytes_per_s and unknown_bandwidth are set");
  EXPECT_EQ(
      Error(WithLink(
          R"({"id": "l", "src": "a", "dst": "b", "kind": "LINK_PCIE", "bandwidthBytesPerS": 1, "latencyUs": 1},
                             {"id": "l", "src": "b", "dst": "a", "kind": "LINK_PCIE", "bandwidthBytesPerS": 1, "latencyUs": 1})")),
      "link 'l': duplicate id");
  EXPECT_EQ(
      Error(WithLink(
          R"({"id": "l", "src": "a", "dst": "b", "kind": "LINK_PCIE", "calibration": {"alphaS": 1e-6}})")),
      "link 'l': calibration.beta_s_per_byte must be > 0, got 0.000000");
}

TEST(TopologyTest, UnknownFiguresAreKeptUnknownAndRefused) {
  auto t = Build(WithLink(
      R"({"id": "l", "src": "a", "dst": "b", "kind": "LINK_VETH", "unknownBandwidth": true, "latencyUs": 3})"));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_FALSE(t->link(0).bandwidth_bytes_per_s.has_value());
  auto m = t->link(0).Model();
  ASSERT_FALSE(m.ok());
  EXPECT_TRUE(m.status().IsFailedPrecondition());
  EXPECT_EQ(m.status().message(),
            "link 'l': bandwidth unknown (not discovered, configured or calibrated); refusing to "
            "estimate over it");
  // Discovered links may omit figures without the explicit flag.
  auto d = Build(WithLink(
      R"({"id": "l", "src": "a", "dst": "b", "kind": "LINK_PCIE", "source": "SOURCE_DISCOVERED"})"));
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->link(0).source, Source::kDiscovered);
}

TEST(TopologyTest, CalibrationOverridesConfiguredFiguresAndRoundTrips) {
  auto t = Build(WithLink(
      R"({"id": "l", "src": "a", "dst": "b", "kind": "LINK_PCIE", "unknownBandwidth": true, "unknownLatency": true})"));
  ASSERT_TRUE(t.ok());
  LinkFit fit;
  fit.model = {10e-6, 1e-10};
  ASSERT_TRUE(t->SetCalibration("l", fit).ok());
  EXPECT_TRUE(t->SetCalibration("nope", fit).IsNotFound());
  EXPECT_EQ(t->link(0).source, Source::kCalibrated);
  auto m = t->link(0).Model();
  ASSERT_TRUE(m.ok());
  EXPECT_DOUBLE_EQ(m->bandwidth(), 1e10);
  auto again = Topology::FromProto(t->ToProto());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->link(0).source, Source::kCalibrated);
  EXPECT_DOUBLE_EQ(again->link(0).calibration->model.alpha_s, 10e-6);
}

TEST(TopologyTest, ShippedConfigsLoad) {
  for (const char* name : {"loopback.json", "h200x8.json", "cluster4.json"}) {
    auto t = Topology::LoadFile(std::string(SY_SOURCE_DIR) + "/configs/topologies/" + name);
    ASSERT_TRUE(t.ok()) << name << ": " << t.status();
    EXPECT_GT(t->num_links(), 0u) << name;
  }
  auto h = Topology::LoadFile(std::string(SY_SOURCE_DIR) + "/configs/topologies/h200x8.json");
  ASSERT_TRUE(h.ok());
  int gpus = 0;
  for (const auto& d : h->devices()) gpus += d.kind == v1::DEVICE_GPU;
  EXPECT_EQ(gpus, 8);
}

TEST(TopologyTest, LoadFileNamesTheFile) {
  auto t = Topology::LoadFile("/nonexistent/topo.json");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().message(), "cannot open '/nonexistent/topo.json': no such file");
}

}  // namespace
}  // namespace switchyard::net_budget
