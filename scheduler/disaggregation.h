// Disaggregation: where an LLM call's prefill runs. Colocated, the worker that decodes the
// call also prefills it (where the session's context lives, only the new tokens); or
// disaggregated, a prefill worker computes the prompt and its KV moves to the decode worker
// over their link. ChoosePrefill compares the two completion-time estimates below and
// picks the cheaper (docs/design.md, "Disaggregation").
//
// For a decode-capable worker d and a prefill worker p (all durations in seconds):
//   prefill(n)     = n / prefill_tokens_per_s (one worker's prefill throughput; attention's
//                    quadratic term is left out)
//   decode         = output_tokens x decode_step (the same on both sides for one d)
//   colocated(d)   = wait_d + prefill(prompt - resident_d) + decode
//                    + interference_weight x decoding_d x prefill(prompt - resident_d)
//                    (the prefill stalls the decode batch running on d: the delay it adds
//                    to the other sequences is counted against this choice)
//   disagg(p, d)   = max(wait_p + prefill(prompt - cached_p) + exposed(p, d), wait_d)
//                    + decode + interference_weight x decoding_p x prefill(prompt - cached_p)
//                    (0 where p only prefills, as the core's prefill workers do)
//   exposed(p, d)  = link_queue_pd + max(0, bytes / link_bytes_per_s
//                    - streaming_overlap x prefill(prompt - cached_p))
//   bytes          = (prompt - resident_d) x kv_bytes_per_token: d already holds the
//                    first resident_d tokens' KV, which a prefill of the same tokens
//                    reproduces exactly, so only the rest moves.
// A worker whose free KV cannot take the call's context is no candidate for decoding.
// The prefill side ships what it computed as a KV move like any other (the core's commit
// rule, the latency class, the destination's credit).
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/result.h"
#include "base/time.h"

namespace switchyard::scheduler {

// How calls are routed: colocated ignores the roles; always sends every call's prefill to
// a prefill worker (when there is one); auto decides per call (ChoosePrefill).
enum class Disaggregation { kColocated, kAlways, kAuto };

// "colocated", "always" or "auto"; InvalidArgument naming the value otherwise.
Result<Disaggregation> ParseDisaggregation(const std::string& name);
const char* DisaggregationName(Disaggregation mode);

// What a worker does when calls are disaggregated: a prefill worker only prefills (its KV
// then moves to a decode worker), a decode worker runs the rest, a mixed one either.
// Under Disaggregation::kColocated every worker is mixed, whatever its role.
enum class WorkerRole : uint8_t { kMixed, kPrefill, kDecode };

// "prefill", "decode" or "mixed" ("" is mixed); InvalidArgument naming the value otherwise.
Result<WorkerRole> ParseWorkerRole(const std::string& name);
const char* WorkerRoleName(WorkerRole role);

// The call: its whole prompt and its predicted output.
struct PdCall {
  int64_t prompt_tokens = 0;
  int64_t output_tokens = 0;
};

// A worker that can decode the call (run it whole, or take it after a hand-off; a prefill
// candidate of the same worker is never paired with it).
struct DecodeCandidate {
  int worker = -1;
  int64_t resident_tokens = 0;  // prompt tokens whose KV it holds (the session's context)
  Duration wait{0};             // until it can take the call
  int decoding = 0;             // sequences in its running batch
  uint64_t kv_free_bytes = 0;   // free KV room (HBM)
};

// A prefill worker, with the link from it to each decode candidate (same order).
struct PrefillCandidate {
  int worker = -1;
  int64_t cached_tokens = 0;  // prompt tokens it holds already (a shared preamble)
  Duration wait{0};
  int decoding = 0;                      // sequences in its running batch
  std::vector<Duration> link_queue;      // the planner's queue to each decode candidate
  std::vector<double> link_bytes_per_s;  // and that link's rate (> 0)
};

struct PdModel {
  double kv_bytes_per_token = 0;
  double prefill_tokens_per_s = 0;  // > 0
  Duration decode_step{0};
  double interference_weight = 1.0;  // others' delay against the colocated choice (0: none)
  double streaming_overlap = 1.0;    // share of the move hidden behind the prefill (layer-
                                     // wise streaming: 1; a move after the last layer: 0)
};

struct PrefillChoice {
  bool disaggregate = false;
  int prefill_worker = -1;  // disaggregate: where the prefill runs
  int decode_worker = -1;   // where the call decodes (and, colocated, prefills)
  // The best estimate of each kind (Duration::max() when there is no candidate of it).
  Duration colocated = Duration::max(), disaggregated = Duration::max();
  uint64_t move_bytes = 0;  // disaggregate: KV moved prefill -> decode
  std::string why;          // the two estimates in words, for logs and reports
};

// The route of one call. With no decode candidate able to hold the context, decode_worker
// is -1. kColocated never disaggregates; kAlways disaggregates whenever a prefill
// candidate exists (to the decode worker that makes it cheapest); kAuto takes the smaller
// estimate (colocated on a tie).
PrefillChoice ChoosePrefill(const PdCall& call, const std::vector<DecodeCandidate>& decode,
                            const std::vector<PrefillCandidate>& prefill, const PdModel& model,
                            Disaggregation mode);

}  // namespace switchyard::scheduler
