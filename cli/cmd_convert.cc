// `switchyard convert --from FORMAT INPUT -o OUTPUT [options]`: public traces →
// Switchyard workflow traces (JSON lines of v1::TraceRecord). Rules: replay/convert.h;
// options: replay/cli_options.h (ParseConvertArgs).
#include <cstdio>
#include <fstream>
#include <string>

#include "cli/command.h"
#include "proto/json.h"
#include "replay/cli_options.h"
#include "replay/convert.h"

namespace {

using namespace switchyard;          // NOLINT
using namespace switchyard::replay;  // NOLINT

int RunConvert(const std::vector<std::string>& args) {
  Result<ConvertArgs> parsed = ParseConvertArgs(args);
  if (!parsed.ok()) {
    std::fprintf(stderr, "switchyard convert: %s\n%s", parsed.status().message().c_str(),
                 kConvertUsage);
    return 2;
  }
  const ConvertArgs& a = *parsed;
  if (a.help) {
    std::printf("%s", kConvertUsage);
    return 0;
  }
  const ConvertOptions& o = a.options;
  if (o.deadline == DeadlineRule::kOracleSpan && o.deadline_factor > 0) {
    std::fprintf(stderr,
                 "switchyard convert: warning: deadlines are an ORACLE (arrival + %g x each "
                 "workflow's recorded span, which tracks its size: EDF on them is "
                 "shortest-job-first with foresight); the trace's workflows carry the label "
                 "deadline_rule=oracle-span:%g\n",
                 o.deadline_factor, o.deadline_factor);
  }
  auto text = proto::ReadFile(a.input);
  if (!text.ok()) return std::fprintf(stderr, "%s\n", text.status().ToString().c_str()), 1;
  Result<std::vector<v1::TraceRecord>> recs = Status::InvalidArgument("unknown --from");
  if (a.from == "agent-sessions") recs = ConvertAgentSessions(*text, o);
  if (a.from == "mooncake") recs = ConvertMooncake(*text, o);
  if (a.from == "azure") recs = ConvertAzure(*text, o);
  if (!recs.ok()) return std::fprintf(stderr, "%s\n", recs.status().ToString().c_str()), 1;
  auto lines = ToJsonLines(*recs);
  if (!lines.ok()) return std::fprintf(stderr, "%s\n", lines.status().ToString().c_str()), 1;
  std::ofstream out(a.output, std::ios::binary | std::ios::trunc);
  out << *lines;
  out.close();
  if (!out) return std::fprintf(stderr, "cannot write '%s'\n", a.output.c_str()), 1;
  size_t nodes = 0;
  for (const auto& r : *recs) nodes += r.workflow().nodes_size();
  std::printf("converted %zu workflows (%zu nodes) from %s to %s\n", recs->size(), nodes,
              a.from.c_str(), a.output.c_str());
  std::fprintf(stderr, "switchyard convert: deadlines: %s\n", DescribeDeadlines(o).c_str());
  return 0;
}

}  // namespace

SY_REGISTER_COMMAND(convert, "convert", "convert public traces into Switchyard workflow traces",
                    RunConvert);
