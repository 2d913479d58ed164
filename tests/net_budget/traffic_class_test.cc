#include "net_budget/traffic_class.h"

#include <gtest/gtest.h>

namespace switchyard::net_budget {
namespace {

TEST(TrafficClassTest, ConvertsBothWays) {
  for (TrafficClass c : kAllClasses) {
    auto back = FromProto(ToProto(c));
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, c);
  }
  EXPECT_EQ(ClassName(TrafficClass::kControl), "control");
  EXPECT_EQ(FromProto(v1::TRAFFIC_CLASS_UNSPECIFIED).status().message(),
            "traffic class 0 is not one of latency, throughput, background, control");
}

}  // namespace
}  // namespace switchyard::net_budget
