#include "net_budget/describe.h"

#include <gtest/gtest.h>

#include "proto/json.h"

namespace switchyard::net_budget {
namespace {

TEST(DescribeTest, FormatsFigures) {
  EXPECT_EQ(FormatBandwidth(4.5e11), "450 GB/s");
  EXPECT_EQ(FormatBandwidth(3.125e9), "3.12 GB/s");
  EXPECT_EQ(FormatBandwidth(1.25e8), "125 MB/s");
  EXPECT_EQ(FormatBandwidth(std::nullopt), "unknown");
  EXPECT_EQ(FormatLatency(2e-6), "2 us");
  EXPECT_EQ(FormatLatency(1.5e-3), "1.5 ms");
  EXPECT_EQ(FormatLatency(0.0), "0 us");
  EXPECT_EQ(FormatLatency(std::nullopt), "unknown");
}

TEST(DescribeTest, ListsDevicesLinksAndSources) {
  v1::Topology p;
  ASSERT_TRUE(proto::ParseJson(R"({"name": "t",
    "devices": [{"id": "a", "kind": "DEVICE_GPU", "numaNode": 0}, {"id": "b", "kind": "DEVICE_NIC"}],
    "links": [{"id": "ab", "src": "a", "dst": "b", "kind": "LINK_PCIE", "bandwidthBytesPerS": 5e10,
               "latencyUs": 1, "duplex": true},
              {"id": "ba", "src": "b", "dst": "a", "kind": "LINK_VETH", "source": "SOURCE_DISCOVERED"}]})",
                               &p)
                  .ok());
  auto t = Topology::FromProto(p);
  ASSERT_TRUE(t.ok());
  std::string text = FormatTopology(*t);
  EXPECT_NE(text.find("topology: t"), std::string::npos);
  EXPECT_NE(text.find("50 GB/s"), std::string::npos);
  EXPECT_NE(text.find("a <-> b"), std::string::npos);
  EXPECT_NE(text.find("b -> a"), std::string::npos);
  EXPECT_NE(text.find("unknown     unknown   discovered"), std::string::npos) << text;
  EXPECT_NE(text.find("configured"), std::string::npos);
}

}  // namespace
}  // namespace switchyard::net_budget
