// Trace converters: public request traces → Switchyard workflow traces.
//
// A Switchyard trace is JSON lines of v1::TraceRecord (proto/switchyard/v1/trace.proto):
// one workflow per line with its arrival time and what really happened per node (the
// replay's oracle). Converters read the source formats as they are and never edit them.
//
//  - agent-sessions (real coding-agent sessions): each session becomes one workflow. LLM
//    calls form a chain on one KV context ("main"; subagent calls on their own
//    "subagent-<k>" contexts). A call whose prompt holds the previous prompt and answer
//    EXTENDs the context by the difference; one that holds the previous prompt but a
//    shorter answer (777 of 3,210 calls in the public trace: the harness re-sends the
//    answer without its reasoning) EXTENDs it from the previous prompt (keep_tokens = that
//    prompt: the prefix a prefix-caching engine reuses; the answer's KV is dropped) unless
//    --context-reuse exact, which starts a new context "main-<g>" as a shrinking prompt
//    (compaction) always does. Each tool call hangs off the LLM call that issued it (the
//    last call requested at or before the tool started) and the next LLM call depends
//    on the tools of the previous call that finished before it was requested. Tool
//    durations and token counts are copied exactly. Calls with zero prompt and output
//    tokens (model "<synthetic>" in the source: placeholders) are dropped. Arrivals are synthesised
//    (sessions were recorded back to back): Poisson at a rate, or bursty (an on/off
//    Markov-modulated Poisson process). Tenants are assigned round-robin over sessions.
//  - mooncake: multi-turn chains rebuilt from hash_ids: a request whose hash_ids start
//    with ALL of an earlier request's hash_ids continues that conversation (the latest
//    such earlier request with the longest prefix is the parent). Each conversation tree
//    becomes one workflow; the gap between a parent's and a child's arrival becomes a
//    "user_turn" tool node (an upper bound of the user's think time: it includes the
//    parent's service time, which the trace does not record). Leading blocks shared with
//    another conversation's root become a tenant-wide shared prefix.
//  - azure: each row becomes a single-node LLM workflow (background load, tenant
//    "background"), arrival from its timestamp relative to the first row.
//
// Deadlines (all converters alike, ConvertOptions::deadline):
//  - kClasses (default): per-tenant SLO classes, deadline = arrival + the class's slack
//    (default "interactive:900s,batch:3h"). A tenant named in `tenant_class` takes that
//    class; otherwise tenant "tenant-<i>" takes class i mod the number of classes (tenant-0
//    interactive, tenant-1 batch, tenant-2 interactive, ...), and any other tenant (azure's
//    "background") the last class. The deadline says nothing about the workflow's size.
//    Workflow label: deadline_rule = "class:<name>".
//  - kOracleSpan: deadline = arrival + factor × the workflow's recorded (unloaded) span
//    (agent-sessions: session span; mooncake: last turn's offset + its nominal service
//    time; azure: nominal service time from its token counts). This is an ORACLE: the
//    span correlates with the workflow's work (0.84 on agent sessions), so EDF on it is
//    shortest-job-first with foresight. Label: deadline_rule = "oracle-span:<factor>".
//    Use it only as an upper bound.
//  (protobuf prints maps in no fixed order; ToJsonLines sorts labels itself so that
//  traces are byte-identical for the same options.)
//  - kNone: no deadlines, no labels.
//
// Scales (all converters alike, applied to every record before its deadline):
//  - token_scale F (`--token-scale`): every token count of the workflow (prompt, extend,
//    max output and shared-prefix hints, recorded output tokens) becomes round(F × n),
//    at least 1 where n > 0 (0 stays 0). Counts are scaled one by one, so a node's
//    prompt need not equal the sum of its context's scaled extends and outputs; the core
//    and the engines read extend_tokens for EXTEND and the context's own length.
//    Use it to shrink real agent sessions (10k–100k-token prompts) to what a CPU engine
//    computes in minutes. Label token_scale = "<F>" when F != 1.
//  - time_scale F (`--time-scale`): every recorded duration (tool waits, mooncake's
//    user turns, LLM call times) and every arrival offset (synthesised or recorded: a
//    Poisson --rate R becomes R / F) is multiplied by F, rounded to the ms; the oracle
//    span is scaled alike, class slacks are not. It bakes into the trace what
//    clients/python/run_workload.py --time-scale does at play time, so that `switchyard
//    replay` sees the same compressed waits; play such a trace with --time-scale 1.
//    Label time_scale = "<F>" when F != 1.
//  ToJsonLines prints a workflow's labels sorted by key, so traces with several labels
//  stay byte-identical for the same options.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/result.h"
#include "proto/switchyard/v1/trace.pb.h"

namespace switchyard::replay {

// Arrivals: Poisson; bursty (on/off Markov-modulated Poisson); gamma (a renewal process
// whose inter-arrival gaps are gamma-distributed with coefficient of variation
// ConvertOptions::arrival_cv: 1 is Poisson, 2-4 the burstiness of production LLM traces);
// recorded (the trace's own).
enum class ArrivalProcess { kPoisson, kBursty, kGamma, kRecorded };

enum class DeadlineRule { kClasses, kOracleSpan, kNone };

// An SLO class: workflows of its tenants get deadline = arrival + slack_s.
struct DeadlineClass {
  std::string name;
  double slack_s = 0;
};

// "interactive:900s,batch:3h".
std::vector<DeadlineClass> DefaultDeadlineClasses();

struct ConvertOptions {
  ArrivalProcess arrival = ArrivalProcess::kPoisson;
  double rate_per_s = 0.05;     // mean workflow arrival rate (Poisson / bursty mean)
  double burst_factor = 4.0;    // bursty: rate in a burst / mean rate
  double burst_fraction = 0.2;  // bursty: fraction of time spent in bursts
  double arrival_cv = 1.0;      // gamma: the gaps' coefficient of variation (std / mean)
  uint64_t seed = 1;
  DeadlineRule deadline = DeadlineRule::kClasses;
  std::vector<DeadlineClass> deadline_classes = DefaultDeadlineClasses();  // kClasses
  std::map<std::string, std::string> tenant_class;  // kClasses: tenant -> class name
  double deadline_factor = 3.0;  // kOracleSpan: arrival + factor × recorded span; <= 0: none
  int tenants = 1;               // tenants "tenant-0".."tenant-<n-1>", round-robin
  int repeat = 1;                // agent-sessions: emit the session list this many times
  // agent-sessions: a call whose prompt holds the previous prompt but not all of its
  // answer continues the context from the previous prompt (CacheRef.keep_tokens); false:
  // it starts a new context (the rule before keep_tokens existed).
  bool prefix_reuse = true;
  // Every converter: > 0: each LLM node's max_output_tokens (the cap a client sends) is
  // max(this, the recorded output), so no policy can read a call's recorded length from
  // its hints (only the simulated engine sees it, to stop there); label output_cap. 0
  // ("recorded"): the cap is the recorded output, what a real engine that decodes to the
  // cap (the CPU engine: random weights seldom emit EOS) needs to reproduce the lengths
  // (bench fidelity, scripts/run.sh); policies then see the lengths, an oracle.
  int64_t output_cap = 16384;
  int64_t limit = 0;  // stop after this many workflows (0 = all)
  std::string model_id = "Llama-3.1-8B";
  double token_scale = 1.0;  // > 0: factor on every token count (see "Scales" above)
  double time_scale = 1.0;   // > 0: factor on every duration and arrival offset
  // agent-sessions, human think time (--think-time): > 0, a user request comes before a
  // call with probability 1 / think_every (none before the first call, the session's
  // opening request), preceded by the human's think time — a TOOL node "think-<i>", tool
  // "human", after the previous call and its tools, before the call — drawn log-normal
  // with median think_time_s and shape think_sigma (heavy-tailed: sigma 1.5 puts the mean
  // at 3.1x the median and the 99th percentile at 33x), at most a day. Seeded per session
  // by `seed`. 0: none (the trace records a batch run, no human in the loop).
  double think_time_s = 0;
  double think_sigma = 1.5;
  double think_every = 8;  // agent calls per user request, on average
  // agent-sessions, --shared-preamble N: > 0, every context a session creates starts with
  // the same N tokens (at most its prompt), the harness's system prompt and tool schemas
  // every session of a coding agent sends first: a tenant-wide shared prefix
  // "agent-preamble" (CacheRef.shared_prefix); label shared_preamble. 0: none.
  int64_t shared_preamble_tokens = 0;
};

// Each converter reads the whole input text and returns records sorted by arrival.
// Errors name the line (1-based) and the field.
Result<std::vector<v1::TraceRecord>> ConvertAgentSessions(const std::string& jsonl,
                                                          const ConvertOptions& options);
Result<std::vector<v1::TraceRecord>> ConvertMooncake(const std::string& jsonl,
                                                     const ConvertOptions& options);
Result<std::vector<v1::TraceRecord>> ConvertAzure(const std::string& csv,
                                                  const ConvertOptions& options);

// Writes records as JSON lines (snake_case field names, one record per line).
Result<std::string> ToJsonLines(const std::vector<v1::TraceRecord>& records);
// Reads a Switchyard trace back.
Result<std::vector<v1::TraceRecord>> ParseTrace(const std::string& jsonl);

// Arrival offsets (ms) for n workflows under the options' process (not kRecorded).
std::vector<int64_t> SynthesiseArrivals(size_t n, const ConvertOptions& options);

// The class of a tenant under the rule above (index into options.deadline_classes).
// InvalidArgument when there are no classes or tenant_class names an unknown class.
Result<size_t> DeadlineClassFor(const std::string& tenant, const ConvertOptions& options);

// Option values, parsed for `switchyard convert` (errors name the flag):
//  "900s", "15m", "3h", "1.5h": a duration > 0 in seconds (the unit is required);
Result<double> ParseDurationS(const std::string& text, const std::string& flag);
// "a,b,,c" -> {"a", "b", "", "c"} (empty items kept: callers name them in errors).
std::vector<std::string> SplitList(const std::string& s);
//  "interactive:900s,batch:3h": classes in order (names unique, non-empty);
Result<std::vector<DeadlineClass>> ParseDeadlineClasses(
    const std::string& text, const std::string& flag = "--deadline-class");
//  "tenant-0=interactive,tenant-3=batch": tenant -> class (checked against the classes
//  by the converter, since --deadline-class may come later on the command line);
Result<std::map<std::string, std::string>> ParseTenantClasses(const std::string& text);
//  "none", "oracle-span:F" (F > 0), or a class list as for --deadline-class; sets
//  options->deadline and the rule's fields.
Status ParseDeadlineOption(const std::string& text, ConvertOptions* options);
// One-line description of the deadline rule, e.g. "classes interactive:900s,batch:10800s
// (tenant-<i> -> class i mod 2)" or "oracle-span:3 (ORACLE: ...)"; when a scale is not 1
// it ends with "; trace scaled: " and DescribeScales (the line `convert` prints on stderr).
std::string DescribeDeadlines(const ConvertOptions& options);

// round(factor × n), at least 1 where n > 0; 0 (or a negative n) stays as it is.
int64_t ScaleTokens(int64_t n, double factor);
// "tokens x0.02, times x0.1" (the factors the converter applied; "x1" when unscaled).
std::string DescribeScales(const ConvertOptions& options);

}  // namespace switchyard::replay
