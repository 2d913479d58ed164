// Traffic classes of net_budget (docs/design.md "Traffic classes"), as a dense
// C++ enum for array indexing, with conversion from v1::TrafficClass.
//
// Thread-safety: constants and pure functions.
#pragma once

#include <array>
#include <cstddef>
#include <string_view>

#include "base/result.h"
#include "proto/switchyard/v1/kv.pb.h"

namespace switchyard::net_budget {

enum class TrafficClass : uint8_t { kLatency = 0, kThroughput = 1, kBackground = 2, kControl = 3 };
inline constexpr size_t kNumClasses = 4;
inline constexpr std::array<TrafficClass, kNumClasses> kAllClasses = {
    TrafficClass::kLatency, TrafficClass::kThroughput, TrafficClass::kBackground,
    TrafficClass::kControl};

constexpr size_t ClassIndex(TrafficClass c) { return static_cast<size_t>(c); }
std::string_view ClassName(TrafficClass c);
// InvalidArgument for TRAFFIC_CLASS_UNSPECIFIED or an unknown value.
Result<TrafficClass> FromProto(v1::TrafficClass c);
v1::TrafficClass ToProto(TrafficClass c);

}  // namespace switchyard::net_budget
