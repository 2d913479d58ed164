// azure (Splitwise 2023 conversation trace) → single-node background workflows.
#include <cstdio>
#include <ctime>

#include "replay/convert.h"
#include "replay/convert_internal.h"

namespace switchyard::replay {
namespace {

// "2023-11-16 18:15:46.6805900" → µs since the Unix epoch (UTC).
Result<int64_t> ParseTimestampUs(std::string_view text, const std::string& where) {
  int y, mo, d, h, mi;
  double sec;
  std::string s(text);
  if (std::sscanf(s.c_str(), "%d-%d-%d %d:%d:%lf", &y, &mo, &d, &h, &mi, &sec) != 6 || mo < 1 ||
      mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec < 0 || sec >= 61) {
    return Status::InvalidArgument(where + ": bad TIMESTAMP '" + s + "'");
  }
  std::tm tm{};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  int64_t base = static_cast<int64_t>(timegm(&tm));
  return base * 1'000'000 + static_cast<int64_t>(sec * 1e6 + 0.5);
}

Result<int64_t> ParseCount(std::string_view text, const std::string& where, const char* field) {
  int64_t v = 0;
  if (text.empty()) return Status::InvalidArgument(where + ": " + field + " is empty");
  for (char c : text) {
    if (c < '0' || c > '9') {
      return Status::InvalidArgument(where + ": " + field + " is not a count: '" +
                                     std::string(text) + "'");
    }
    v = v * 10 + (c - '0');
  }
  return v;
}

}  // namespace

Result<std::vector<v1::TraceRecord>> ConvertAzure(const std::string& csv, const ConvertOptions& o) {
  std::vector<v1::TraceRecord> out;
  int64_t first_us = -1;
  bool header_seen = false;
  Status st = ForEachLine(csv, [&](size_t line_no, std::string_view line) -> Status {
    std::string where = "azure line " + std::to_string(line_no);
    if (!header_seen) {
      header_seen = true;
      if (line != "TIMESTAMP,ContextTokens,GeneratedTokens") {
        return Status::InvalidArgument(where +
                                       ": expected header "
                                       "'TIMESTAMP,ContextTokens,GeneratedTokens'");
      }
      return Status::OK();
    }
    if (o.limit > 0 && static_cast<int64_t>(out.size()) >= o.limit) return Status::OK();
    size_t c1 = line.find(','), c2 = line.find(',', c1 == line.npos ? c1 : c1 + 1);
    if (c1 == line.npos || c2 == line.npos) {
      return Status::InvalidArgument(where + ": expected 3 comma-separated fields");
    }
    SY_ASSIGN_OR_RETURN(int64_t ts, ParseTimestampUs(line.substr(0, c1), where));
    SY_ASSIGN_OR_RETURN(int64_t in,
                        ParseCount(line.substr(c1 + 1, c2 - c1 - 1), where, "ContextTokens"));
    SY_ASSIGN_OR_RETURN(int64_t gen, ParseCount(line.substr(c2 + 1), where, "GeneratedTokens"));
    if (in <= 0) return Status::InvalidArgument(where + ": ContextTokens must be > 0");
    if (first_us < 0) first_us = ts;
    int64_t arrival = (ts - first_us + 500) / 1000;
    if (ts < first_us) return Status::InvalidArgument(where + ": TIMESTAMP goes backwards");
    v1::TraceRecord rec;
    rec.set_source("azure:" + std::to_string(line_no));
    rec.set_arrival_ms(arrival);
    v1::Workflow* wf = rec.mutable_workflow();
    wf->set_id("az-" + std::to_string(line_no));
    wf->set_tenant("background");
    wf->set_arrival_ms(arrival);
    wf->set_priority(v1::BATCH);
    v1::ProgramNode* n = wf->add_nodes();
    n->set_id("llm-0");
    n->set_kind(v1::LLM);
    n->set_model_id(o.model_id);
    auto* ref = n->add_cache_refs();
    ref->set_context("c");
    ref->set_mode(v1::CacheRef::CREATE);
    n->mutable_hints()->set_prompt_tokens(in);
    n->mutable_hints()->set_extend_tokens(in);
    n->mutable_hints()->set_max_output_tokens(std::max<int64_t>(1, gen));
    auto* a = rec.add_actuals();
    a->set_node_id("llm-0");
    a->set_output_tokens(gen);
    ApplyScales(o, &rec);
    double nominal_s = in / 10000.0 + gen * 0.020;  // as for mooncake; kOracleSpan only
    SY_RETURN_IF_ERROR(ApplyDeadline(nominal_s, o, &rec));
    out.push_back(std::move(rec));
    return Status::OK();
  });
  if (!st.ok()) return st;
  if (out.empty()) return Status::InvalidArgument("azure input has no rows");
  SortByArrival(&out);
  return out;
}

}  // namespace switchyard::replay
