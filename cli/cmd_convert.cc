// `switchyard convert --from FORMAT INPUT -o OUTPUT [options]`: public traces →
// Switchyard workflow traces (JSON lines of v1::TraceRecord). Rules: bench/replay/convert.h.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "bench/replay/convert.h"
#include "cli/command.h"
#include "proto/json.h"

namespace {

using switchyard::replay::ArrivalProcess;
using switchyard::replay::ConvertOptions;

constexpr const char* kUsage =
    "usage: switchyard convert --from agent-sessions|mooncake|azure INPUT -o OUTPUT\n"
    "  [--arrival poisson|bursty] [--rate R (workflows/s, agent-sessions)] [--seed S]\n"
    "  [--burst-factor F] [--deadline-factor F (0: no deadlines)] [--tenants N]\n"
    "  [--repeat K (agent-sessions)] [--limit N] [--model ID]\n";

int Usage(const std::string& why) {
  std::fprintf(stderr, "switchyard convert: %s\n%s", why.c_str(), kUsage);
  return 2;
}

bool ParseDouble(const std::string& s, double* out) {
  char* end = nullptr;
  *out = std::strtod(s.c_str(), &end);
  return end && *end == '\0' && !s.empty();
}

int RunConvert(const std::vector<std::string>& args) {
  std::string from, input, output;
  ConvertOptions o;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-h" || a == "--help") {
      std::printf("%s", kUsage);
      return 0;
    }
    bool has_value = i + 1 < args.size();
    auto value = [&]() -> std::string { return args[++i]; };
    double d = 0;
    if (a == "--from" && has_value) {
      from = value();
    } else if ((a == "-o" || a == "--out") && has_value) {
      output = value();
    } else if (a == "--arrival" && has_value) {
      std::string v = value();
      if (v == "poisson")
        o.arrival = ArrivalProcess::kPoisson;
      else if (v == "bursty")
        o.arrival = ArrivalProcess::kBursty;
      else
        return Usage("--arrival must be poisson or bursty, not '" + v + "'");
    } else if (a == "--model" && has_value) {
      o.model_id = value();
    } else if ((a == "--rate" || a == "--seed" || a == "--burst-factor" ||
                a == "--deadline-factor" || a == "--tenants" || a == "--repeat" ||
                a == "--limit") &&
               has_value) {
      std::string v = value();
      if (!ParseDouble(v, &d) || d < 0) return Usage(a + " needs a number >= 0, not '" + v + "'");
      if (a == "--rate") o.rate_per_s = d;
      if (a == "--seed") o.seed = static_cast<uint64_t>(d);
      if (a == "--burst-factor") o.burst_factor = d;
      if (a == "--deadline-factor") o.deadline_factor = d;
      if (a == "--tenants") o.tenants = static_cast<int>(d);
      if (a == "--repeat") o.repeat = static_cast<int>(d);
      if (a == "--limit") o.limit = static_cast<int64_t>(d);
    } else if (!a.empty() && a[0] != '-' && input.empty()) {
      input = a;
    } else {
      return Usage("unexpected argument '" + a + "'");
    }
  }
  if (from.empty() || input.empty() || output.empty()) {
    return Usage("--from, INPUT and -o are required");
  }
  if (o.rate_per_s <= 0) return Usage("--rate must be > 0");
  auto text = switchyard::proto::ReadFile(input);
  if (!text.ok()) return std::fprintf(stderr, "%s\n", text.status().ToString().c_str()), 1;
  switchyard::Result<std::vector<switchyard::v1::TraceRecord>> recs =
      switchyard::Status::InvalidArgument("unknown --from '" + from +
                                          "' (agent-sessions, mooncake, azure)");
  if (from == "agent-sessions") recs = switchyard::replay::ConvertAgentSessions(*text, o);
  if (from == "mooncake") recs = switchyard::replay::ConvertMooncake(*text, o);
  if (from == "azure") recs = switchyard::replay::ConvertAzure(*text, o);
  if (!recs.ok()) return std::fprintf(stderr, "%s\n", recs.status().ToString().c_str()), 1;
  auto lines = switchyard::replay::ToJsonLines(*recs);
  if (!lines.ok()) return std::fprintf(stderr, "%s\n", lines.status().ToString().c_str()), 1;
  std::ofstream out(output, std::ios::binary | std::ios::trunc);
  out << *lines;
  out.close();
  if (!out) return std::fprintf(stderr, "cannot write '%s'\n", output.c_str()), 1;
  size_t nodes = 0;
  for (const auto& r : *recs) nodes += r.workflow().nodes_size();
  std::printf("converted %zu workflows (%zu nodes) from %s to %s\n", recs->size(), nodes,
              from.c_str(), output.c_str());
  return 0;
}

}  // namespace

SY_REGISTER_COMMAND(convert, "convert", "convert public traces into Switchyard workflow traces",
                    RunConvert);
