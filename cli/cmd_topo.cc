// `switchyard topo`: print the topology that discovery finds on this machine, or that a
// config file describes, with bandwidth, latency and where each figure came from.
#include <cstdio>
#include <string>

#include "cli/command.h"
#include "net_budget/describe.h"
#include "net_budget/discovery.h"
#include "net_budget/topology.h"
#include "proto/json.h"

namespace {

using namespace switchyard;

constexpr const char* kTopoUsage =
    "usage: switchyard topo [--config FILE] [--json] [--sysfs-root DIR] [--no-nvidia-smi]\n"
    "  --config FILE     load and validate a topology (JSON, schema switchyard.v1.Topology)\n"
    "                    instead of discovering this machine's\n"
    "  --json            print the topology as JSON (loadable again with --config)\n"
    "  --sysfs-root DIR  discover from DIR instead of /sys\n"
    "  --no-nvidia-smi   do not run `nvidia-smi topo -m`\n";

int RunTopo(const std::vector<std::string>& args) {
  std::string config;
  bool json = false;
  net_budget::DiscoveryOptions opts;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      std::printf("%s", kTopoUsage);
      return 0;
    } else if (a == "--json") {
      json = true;
    } else if (a == "--no-nvidia-smi") {
      opts.run_nvidia_smi = false;
    } else if ((a == "--config" || a == "--sysfs-root") && i + 1 < args.size()) {
      (a == "--config" ? config : opts.sysfs_root) = args[++i];
    } else {
      std::fprintf(stderr, "switchyard topo: unknown or incomplete argument '%s'\n%s", a.c_str(),
                   kTopoUsage);
      return 2;
    }
  }
  Result<net_budget::Topology> topo = Status::Internal("unset");
  if (!config.empty()) {
    topo = net_budget::Topology::LoadFile(config);
  } else {
    auto found = net_budget::Discover(opts);
    if (!found.ok()) {
      std::fprintf(stderr, "switchyard topo: %s\n", found.status().ToString().c_str());
      return 1;
    }
    topo = net_budget::Topology::FromProto(*found);
  }
  if (!topo.ok()) {
    std::fprintf(stderr, "switchyard topo: %s\n", topo.status().ToString().c_str());
    return 1;
  }
  if (json) {
    auto text = proto::ToJson(topo->ToProto(), {.pretty = true});
    if (!text.ok()) {
      std::fprintf(stderr, "switchyard topo: %s\n", text.status().ToString().c_str());
      return 1;
    }
    std::printf("%s\n", text->c_str());
  } else {
    std::printf("%s", net_budget::FormatTopology(*topo).c_str());
  }
  return 0;
}

}  // namespace

SY_REGISTER_COMMAND(topo, "topo", "print the network topology found on this machine or in a config",
                    RunTopo);
