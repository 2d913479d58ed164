#include "net_budget/traffic_class.h"

#include <string>

namespace switchyard::net_budget {

std::string_view ClassName(TrafficClass c) {
  switch (c) {
    case TrafficClass::kLatency:
      return "latency";
    case TrafficClass::kThroughput:
      return "throughput";
    case TrafficClass::kBackground:
      return "background";
    case TrafficClass::kControl:
      return "control";
  }
  return "?";
}

Result<TrafficClass> FromProto(v1::TrafficClass c) {
  switch (c) {
    case v1::LATENCY:
      return TrafficClass::kLatency;
    case v1::THROUGHPUT:
      return TrafficClass::kThroughput;
    case v1::BACKGROUND:
      return TrafficClass::kBackground;
    case v1::CONTROL:
      return TrafficClass::kControl;
    default:
      return Status::InvalidArgument("traffic class " + std::to_string(static_cast<int>(c)) +
                                     " is not one of latency, throughput, background, control");
  }
}

v1::TrafficClass ToProto(TrafficClass c) {
  switch (c) {
    case TrafficClass::kLatency:
      return v1::LATENCY;
    case TrafficClass::kThroughput:
      return v1::THROUGHPUT;
    case TrafficClass::kBackground:
      return v1::BACKGROUND;
    case TrafficClass::kControl:
      return v1::CONTROL;
  }
  return v1::TRAFFIC_CLASS_UNSPECIFIED;
}

}  // namespace switchyard::net_budget
