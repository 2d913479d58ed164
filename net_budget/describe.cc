#include "net_budget/describe.h"

#include <cstdio>

namespace switchyard::net_budget {
namespace {

std::string Fmt(const char* f, double v, const char* unit) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), f, v);
  return std::string(buf) + unit;
}

std::string Pad(std::string s, size_t w) {
  if (s.size() < w) s.append(w - s.size(), ' ');
  return s;
}

}  // namespace

std::string FormatBandwidth(std::optional<double> b) {
  if (!b) return "unknown";
  if (*b >= 1e9) return Fmt("%.3g", *b / 1e9, " GB/s");
  if (*b >= 1e6) return Fmt("%.3g", *b / 1e6, " MB/s");
  if (*b >= 1e3) return Fmt("%.3g", *b / 1e3, " kB/s");
  return Fmt("%.3g", *b, " B/s");
}

std::string FormatLatency(std::optional<double> s) {
  if (!s) return "unknown";
  if (*s >= 1) return Fmt("%.3g", *s, " s");
  if (*s >= 1e-3) return Fmt("%.3g", *s * 1e3, " ms");
  if (*s >= 1e-6 || *s == 0) return Fmt("%.3g", *s * 1e6, " us");
  return Fmt("%.3g", *s * 1e9, " ns");
}

std::string FormatTopology(const Topology& t) {
  std::string out = "topology: " + (t.name().empty() ? std::string("(unnamed)") : t.name()) +
                    "\n\ndevices (" + std::to_string(t.num_devices()) + "):\n";
  for (const Device& d : t.devices()) {
    std::string numa = d.numa_node ? std::to_string(*d.numa_node) : "unknown";
    out += "  " + Pad(d.id, 28) + " " + Pad(std::string(DeviceKindName(d.kind)), 7) + " numa " +
           Pad(numa, 8) + " " + Pad(std::string(SourceName(d.source)), 11) + " " + d.name + "\n";
  }
  out += "\nlinks (" + std::to_string(t.num_links()) + "):\n";
  for (const Link& l : t.links()) {
    std::optional<double> bw = l.bandwidth_bytes_per_s, lat = l.latency_s;
    std::string fit;
    if (l.calibration) {
      bw = l.calibration->model.bandwidth();
      lat = l.calibration->model.alpha_s;
      fit = " (alpha " + FormatLatency(lat) + ", beta " +
            Fmt("%.4g", l.calibration->model.beta_s_per_byte, " s/B") + ", " +
            std::to_string(l.calibration->samples) + " samples)";
    }
    std::string ends = t.device(l.src).id + (l.duplex ? " <-> " : " -> ") + t.device(l.dst).id;
    out += "  " + Pad(l.id, 28) + " " + Pad(std::string(LinkKindName(l.kind)), 10) + " " +
           Pad(FormatBandwidth(bw), 11) + " " + Pad(FormatLatency(lat), 9) + " " +
           Pad(std::string(SourceName(l.source)), 11) + " " + ends + fit + "\n";
  }
  return out;
}

}  // namespace switchyard::net_budget
