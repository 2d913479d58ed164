#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <set>

#include "proto/json.h"
#include "replay/convert.h"
#include "replay/convert_internal.h"

namespace switchyard::replay {

std::vector<int64_t> SynthesiseArrivals(size_t n, const ConvertOptions& o) {
  std::mt19937_64 rng(o.seed);
  std::vector<int64_t> out;
  out.reserve(n);
  double t = 0;
  if (o.arrival == ArrivalProcess::kBursty) {
    // On/off Markov-modulated Poisson: bursts at burst_factor × mean rate for a
    // burst_fraction of the time; the quiet rate keeps the overall mean at rate_per_s.
    double hi = o.rate_per_s * o.burst_factor;
    double lo = std::max(0.0, o.rate_per_s * (1 - o.burst_fraction * o.burst_factor) /
                                  std::max(1e-9, 1 - o.burst_fraction));
    double mean_burst_s = 10.0 / std::max(1e-9, hi);  // ~10 arrivals per burst
    double mean_quiet_s = mean_burst_s * (1 - o.burst_fraction) / o.burst_fraction;
    std::exponential_distribution<double> burst_len(1 / mean_burst_s);
    std::exponential_distribution<double> quiet_len(1 / mean_quiet_s);
    bool in_burst = false;
    double phase_end = quiet_len(rng);
    while (out.size() < n) {
      double rate = in_burst ? hi : lo;
      double step = rate > 0 ? std::exponential_distribution<double>(rate)(rng) : INFINITY;
      if (t + step >= phase_end) {
        t = phase_end;
        in_burst = !in_burst;
        phase_end = t + (in_burst ? burst_len(rng) : quiet_len(rng));
        continue;
      }
      t += step;
      out.push_back(static_cast<int64_t>(std::llround(t * 1000)));
    }
  } else if (o.arrival == ArrivalProcess::kGamma) {
    // Gamma gaps of mean 1/rate: shape 1/cv^2, scale cv^2/rate (cv 1: exponential).
    const double shape = 1 / (o.arrival_cv * o.arrival_cv);
    std::gamma_distribution<double> gap(shape, 1 / (o.rate_per_s * shape));
    for (size_t i = 0; i < n; ++i) {
      t += gap(rng);
      out.push_back(static_cast<int64_t>(std::llround(t * 1000)));
    }
  } else {
    std::exponential_distribution<double> gap(o.rate_per_s);
    for (size_t i = 0; i < n; ++i) {
      t += gap(rng);
      out.push_back(static_cast<int64_t>(std::llround(t * 1000)));
    }
  }
  return out;
}

namespace {

std::string JsonQuoted(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

// One record as a JSON line. protobuf prints a map in its hash order, which differs from
// run to run, so a workflow with several labels is printed without them and its labels,
// sorted by key, are put first in its object.
Result<std::string> RecordJson(const v1::TraceRecord& r, const proto::JsonPrintOptions& opts) {
  if (r.workflow().labels_size() <= 1) return proto::ToJson(r, opts);
  v1::TraceRecord bare = r;
  bare.mutable_workflow()->clear_labels();
  SY_ASSIGN_OR_RETURN(std::string json, proto::ToJson(bare, opts));
  const std::string key = "\"workflow\":{";
  size_t at = json.find(key);
  if (at == std::string::npos) {
    return Status::Internal("trace record of workflow '" + r.workflow().id() +
                            "': no \"workflow\" object in its JSON");
  }
  at += key.size();
  std::map<std::string, std::string> sorted(r.workflow().labels().begin(),
                                            r.workflow().labels().end());
  std::string labels = "\"labels\":{";
  for (const auto& [k, v] : sorted) {
    labels += (labels.back() == '{' ? "" : ",") + JsonQuoted(k) + ":" + JsonQuoted(v);
  }
  labels += json[at] == '}' ? "}" : "},";
  json.insert(at, labels);
  return json;
}

std::string FormatFactor(double f) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", f);
  return buf;
}

int64_t ScaleMs(int64_t ms, double factor) {
  return static_cast<int64_t>(std::llround(static_cast<double>(ms) * factor));
}

void ScaleHints(double f, v1::ProgramNode* n) {
  if (n->has_hints()) {
    v1::Hints* h = n->mutable_hints();
    h->set_prompt_tokens(ScaleTokens(h->prompt_tokens(), f));
    h->set_extend_tokens(ScaleTokens(h->extend_tokens(), f));
    h->set_max_output_tokens(ScaleTokens(h->max_output_tokens(), f));
  }
  for (v1::CacheRef& ref : *n->mutable_cache_refs()) {
    ref.set_shared_prefix_tokens(ScaleTokens(ref.shared_prefix_tokens(), f));
    ref.set_keep_tokens(ScaleTokens(ref.keep_tokens(), f));
  }
}

}  // namespace

Result<std::string> ToJsonLines(const std::vector<v1::TraceRecord>& records) {
  std::string out;
  proto::JsonPrintOptions opts;
  opts.preserve_proto_field_names = true;
  for (const auto& r : records) {
    SY_ASSIGN_OR_RETURN(std::string line, RecordJson(r, opts));
    out += line;
    out += '\n';
  }
  return out;
}

int64_t ScaleTokens(int64_t n, double factor) {
  if (n <= 0) return n;
  return std::max<int64_t>(1, std::llround(static_cast<double>(n) * factor));
}

std::string DescribeScales(const ConvertOptions& o) {
  return "tokens x" + FormatFactor(o.token_scale) + ", times x" + FormatFactor(o.time_scale);
}

void ApplyScales(const ConvertOptions& o, v1::TraceRecord* rec) {
  v1::Workflow* wf = rec->mutable_workflow();
  if (o.output_cap > 0) {
    for (v1::ProgramNode& n : *wf->mutable_nodes())
      if (n.kind() == v1::LLM)
        n.mutable_hints()->set_max_output_tokens(
            std::max(o.output_cap, n.hints().max_output_tokens()));
    (*wf->mutable_labels())["output_cap"] = std::to_string(o.output_cap);
  }
  if (o.token_scale != 1) {
    for (v1::ProgramNode& n : *wf->mutable_nodes()) ScaleHints(o.token_scale, &n);
    for (v1::NodeActual& a : *rec->mutable_actuals()) {
      a.set_output_tokens(ScaleTokens(a.output_tokens(), o.token_scale));
    }
    (*wf->mutable_labels())["token_scale"] = FormatFactor(o.token_scale);
  }
  if (o.time_scale != 1) {
    rec->set_arrival_ms(ScaleMs(rec->arrival_ms(), o.time_scale));
    wf->set_arrival_ms(ScaleMs(wf->arrival_ms(), o.time_scale));
    for (v1::NodeActual& a : *rec->mutable_actuals()) {
      a.set_duration_ms(ScaleMs(a.duration_ms(), o.time_scale));
    }
    (*wf->mutable_labels())["time_scale"] = FormatFactor(o.time_scale);
  }
}

Result<std::vector<v1::TraceRecord>> ParseTrace(const std::string& jsonl) {
  std::vector<v1::TraceRecord> out;
  Status st = ForEachLine(jsonl, [&](size_t line_no, std::string_view line) -> Status {
    v1::TraceRecord r;
    std::string where = "trace line " + std::to_string(line_no);
    proto::JsonParseOptions opts;
    opts.source = where;
    SY_RETURN_IF_ERROR(proto::ParseJson(line, &r, opts));
    out.push_back(std::move(r));
    return Status::OK();
  });
  if (!st.ok()) return st;
  return out;
}

Status ForEachLine(const std::string& text,
                   const std::function<Status(size_t, std::string_view)>& fn) {
  size_t line_no = 0, pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + pos, end - pos);
    ++line_no;
    pos = end + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
    SY_RETURN_IF_ERROR(fn(line_no, line));
  }
  return Status::OK();
}

std::string TenantFor(size_t index, const ConvertOptions& o) {
  int n = std::max(1, o.tenants);
  return "tenant-" + std::to_string(index % static_cast<size_t>(n));
}

void SortByArrival(std::vector<v1::TraceRecord>* records) {
  std::stable_sort(records->begin(), records->end(),
                   [](const v1::TraceRecord& a, const v1::TraceRecord& b) {
                     return a.arrival_ms() < b.arrival_ms();
                   });
}

int64_t SecondsToMs(double s) { return static_cast<int64_t>(std::llround(s * 1000.0)); }

std::vector<std::string> SplitList(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t comma = s.find(',', start);
    if (comma == std::string::npos) comma = s.size();
    out.push_back(s.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

namespace {

// "900s" / "15m" / "3h" for a slack in seconds (the largest unit that divides it).
std::string FormatDuration(double s) {
  char buf[64];
  if (s >= 3600 && std::fmod(s, 3600) == 0)
    std::snprintf(buf, sizeof(buf), "%gh", s / 3600);
  else if (s >= 60 && std::fmod(s, 60) == 0)
    std::snprintf(buf, sizeof(buf), "%gm", s / 60);
  else
    std::snprintf(buf, sizeof(buf), "%gs", s);
  return buf;
}

std::string ClassList(const std::vector<DeadlineClass>& classes) {
  std::string s;
  for (const DeadlineClass& c : classes)
    s += (s.empty() ? "" : ",") + c.name + ":" + FormatDuration(c.slack_s);
  return s;
}

}  // namespace

std::vector<DeadlineClass> DefaultDeadlineClasses() {
  return {{"interactive", 900}, {"batch", 3 * 3600}};
}

Result<double> ParseDurationS(const std::string& text, const std::string& flag) {
  std::string bad = flag + ": '" + text + "' is not a duration > 0 with a unit s, m or h";
  if (text.size() < 2) return Status::InvalidArgument(bad);
  char unit = text.back();
  double scale = unit == 's' ? 1 : unit == 'm' ? 60 : unit == 'h' ? 3600 : 0;
  if (scale == 0) return Status::InvalidArgument(bad);
  std::string number = text.substr(0, text.size() - 1);
  char* end = nullptr;
  double v = std::strtod(number.c_str(), &end);
  if (!end || *end != '\0' || !std::isfinite(v) || v <= 0) return Status::InvalidArgument(bad);
  return v * scale;
}

Result<std::vector<DeadlineClass>> ParseDeadlineClasses(const std::string& text,
                                                        const std::string& flag) {
  std::vector<DeadlineClass> out;
  std::set<std::string> names;
  for (const std::string& item : SplitList(text)) {
    size_t colon = item.find(':');
    if (colon == std::string::npos || colon == 0) {
      return Status::InvalidArgument(flag + ": '" + item +
                                     "' is not NAME:DURATION (e.g. interactive:900s)");
    }
    DeadlineClass c;
    c.name = item.substr(0, colon);
    SY_ASSIGN_OR_RETURN(c.slack_s, ParseDurationS(item.substr(colon + 1), flag));
    if (!names.insert(c.name).second) {
      return Status::InvalidArgument(flag + ": class '" + c.name + "' appears twice");
    }
    out.push_back(std::move(c));
  }
  return out;
}

Result<std::map<std::string, std::string>> ParseTenantClasses(const std::string& text) {
  std::map<std::string, std::string> out;
  for (const std::string& item : SplitList(text)) {
    size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size()) {
      return Status::InvalidArgument("--tenant-class: '" + item +
                                     "' is not TENANT=CLASS (e.g. tenant-0=interactive)");
    }
    if (!out.emplace(item.substr(0, eq), item.substr(eq + 1)).second) {
      return Status::InvalidArgument("--tenant-class: tenant '" + item.substr(0, eq) +
                                     "' appears twice");
    }
  }
  return out;
}

Status ParseDeadlineOption(const std::string& text, ConvertOptions* o) {
  if (text == "none") {
    o->deadline = DeadlineRule::kNone;
    return Status::OK();
  }
  const std::string oracle = "oracle-span:";
  if (text.rfind(oracle, 0) == 0) {
    std::string f = text.substr(oracle.size());
    char* end = nullptr;
    double v = std::strtod(f.c_str(), &end);
    if (f.empty() || !end || *end != '\0' || !std::isfinite(v) || v <= 0) {
      return Status::InvalidArgument("--deadline: oracle-span needs a factor > 0, not '" + f + "'");
    }
    o->deadline = DeadlineRule::kOracleSpan;
    o->deadline_factor = v;
    return Status::OK();
  }
  if (text.find(':') == std::string::npos) {
    return Status::InvalidArgument(
        "--deadline must be none, oracle-span:F or classes "
        "NAME:DURATION,..., not '" +
        text + "'");
  }
  Result<std::vector<DeadlineClass>> classes = ParseDeadlineClasses(text, "--deadline");
  if (!classes.ok()) return classes.status();
  o->deadline = DeadlineRule::kClasses;
  o->deadline_classes = std::move(*classes);
  return Status::OK();
}

Result<size_t> DeadlineClassFor(const std::string& tenant, const ConvertOptions& o) {
  if (o.deadline_classes.empty()) {
    return Status::InvalidArgument("deadline_classes is empty (--deadline-class)");
  }
  size_t n = o.deadline_classes.size();
  auto named = o.tenant_class.find(tenant);
  if (named != o.tenant_class.end()) {
    for (size_t i = 0; i < n; ++i)
      if (o.deadline_classes[i].name == named->second) return i;
    return Status::InvalidArgument("--tenant-class: tenant '" + tenant + "' has class '" +
                                   named->second + "', which is not in --deadline-class (" +
                                   ClassList(o.deadline_classes) + ")");
  }
  const std::string prefix = "tenant-";
  if (tenant.rfind(prefix, 0) == 0 && tenant.size() > prefix.size() &&
      tenant.find_first_not_of("0123456789", prefix.size()) == std::string::npos) {
    return static_cast<size_t>(std::strtoull(tenant.c_str() + prefix.size(), nullptr, 10) % n);
  }
  return n - 1;
}

namespace {

std::string DescribeDeadlineRule(const ConvertOptions& o) {
  char buf[256];
  switch (o.deadline) {
    case DeadlineRule::kNone:
      return "none";
    case DeadlineRule::kOracleSpan:
      if (o.deadline_factor <= 0) return "none";
      std::snprintf(buf, sizeof(buf),
                    "oracle-span:%g (ORACLE: arrival + %g x the workflow's recorded span, which "
                    "tracks its size; EDF on it is shortest-job-first with foresight)",
                    o.deadline_factor, o.deadline_factor);
      return buf;
    case DeadlineRule::kClasses:
      break;
  }
  std::string s = "classes " + ClassList(o.deadline_classes) + " (";
  for (const auto& [tenant, cls] : o.tenant_class) s += tenant + " -> " + cls + ", ";
  std::snprintf(buf, sizeof(buf), "tenant-<i> -> class i mod %zu, other tenants -> %s)",
                o.deadline_classes.size(),
                o.deadline_classes.empty() ? "?" : o.deadline_classes.back().name.c_str());
  return s + buf;
}

}  // namespace

std::string DescribeDeadlines(const ConvertOptions& o) {
  std::string rule = DescribeDeadlineRule(o);
  if (o.token_scale == 1 && o.time_scale == 1) return rule;
  // `switchyard convert` prints this line on stderr: the scales go with it.
  return rule + "; trace scaled: " + DescribeScales(o) +
         (o.time_scale != 1 && o.deadline == DeadlineRule::kClasses ? " (class slacks are not)"
                                                                    : "");
}

Status ApplyDeadline(double oracle_span_s, const ConvertOptions& o, v1::TraceRecord* rec) {
  v1::Workflow* wf = rec->mutable_workflow();
  int64_t arrival = rec->arrival_ms();
  switch (o.deadline) {
    case DeadlineRule::kNone:
      return Status::OK();
    case DeadlineRule::kOracleSpan: {
      if (o.deadline_factor <= 0) return Status::OK();
      double span_s = oracle_span_s * o.time_scale;  // the recorded span, scaled as the trace
      wf->set_deadline_ms(arrival + SecondsToMs(o.deadline_factor * span_s));
      char buf[64];
      std::snprintf(buf, sizeof(buf), "oracle-span:%g", o.deadline_factor);
      (*wf->mutable_labels())["deadline_rule"] = buf;
      return Status::OK();
    }
    case DeadlineRule::kClasses: {
      SY_ASSIGN_OR_RETURN(size_t k, DeadlineClassFor(wf->tenant(), o));
      const DeadlineClass& c = o.deadline_classes[k];
      wf->set_deadline_ms(arrival + SecondsToMs(c.slack_s));
      (*wf->mutable_labels())["deadline_rule"] = "class:" + c.name;
      return Status::OK();
    }
  }
  return Status::OK();
}

}  // namespace switchyard::replay
