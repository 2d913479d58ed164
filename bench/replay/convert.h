// Trace converters: public request traces → Switchyard workflow traces.
//
// A Switchyard trace is JSON lines of v1::TraceRecord (proto/switchyard/v1/trace.proto):
// one workflow per line with its arrival time and what really happened per node (the
// replay's oracle). Converters read the source formats as they are and never edit them.
//
//  - agent-sessions (real coding-agent sessions): each session becomes one workflow. LLM
//    calls form a chain on one KV context ("main"; subagent calls on their own
//    "subagent-<k>" contexts); each tool call hangs off the LLM call that issued it (the
//    last call requested at or before the tool started) and the next LLM call depends
//    on the tools of the previous call that finished before it was requested. Tool
//    durations and token counts are copied exactly. Calls with zero prompt and output
//    tokens (model "<synthetic>" in the source: placeholders) are dropped. Arrivals are synthesised
//    (sessions were recorded back to back): Poisson at a rate, or bursty (an on/off
//    Markov-modulated Poisson process). Deadline = arrival + factor × the session's
//    recorded (unloaded) duration. Tenants are assigned round-robin over sessions.
//  - mooncake: multi-turn chains rebuilt from hash_ids: a request whose hash_ids start
//    with ALL of an earlier request's hash_ids continues that conversation (the latest
//    such earlier request with the longest prefix is the parent). Each conversation tree
//    becomes one workflow; the gap between a parent's and a child's arrival becomes a
//    "user_turn" tool node (an upper bound of the user's think time: it includes the
//    parent's service time, which the trace does not record). Leading blocks shared with
//    another conversation's root become a tenant-wide shared prefix.
//  - azure: each row becomes a single-node LLM workflow (background load), arrival from
//    its timestamp relative to the first row.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/result.h"
#include "proto/switchyard/v1/trace.pb.h"

namespace switchyard::replay {

enum class ArrivalProcess { kPoisson, kBursty, kRecorded };

struct ConvertOptions {
  ArrivalProcess arrival = ArrivalProcess::kPoisson;
  double rate_per_s = 0.05;     // mean workflow arrival rate (Poisson / bursty mean)
  double burst_factor = 4.0;    // bursty: rate in a burst / mean rate
  double burst_fraction = 0.2;  // bursty: fraction of time spent in bursts
  uint64_t seed = 1;
  double deadline_factor = 3.0;  // deadline = arrival + factor × unloaded duration; 0 = none
  int tenants = 1;               // tenants "tenant-0".."tenant-<n-1>", round-robin
  int repeat = 1;                // agent-sessions: emit the session list this many times
  int64_t limit = 0;             // stop after this many workflows (0 = all)
  std::string model_id = "Llama-3.1-8B";
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

}  // namespace switchyard::replay
