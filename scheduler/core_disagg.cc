// Prefill/decode disaggregation in the core: routing a fresh call with ChoosePrefill
// (disaggregation.h), the hand-off once its prefill is done, and what it moved.
//
// The execution the estimate stands for: the call is placed on the prefill worker like any
// node (its contexts readied there: moved or recomputed), prefills, emits its first token,
// and stops there keeping its KV (PreemptNode, reason kHandOff). Queued again, it may only
// go to a decode-capable worker, and placement moves its context there as a latency-class
// KV move (the commit rule and the link budgets as for every move), or recomputes it where
// that is cheaper. The move starts after the last layer is computed (no layer-wise
// streaming here): the estimate's streaming_overlap is 0.
#include <algorithm>
#include <optional>

#include "scheduler/internal/core_state.h"

namespace switchyard::scheduler::internal {
namespace {

constexpr const char* kHandOff = "prefill done: decodes on another worker";

using Prefixes = std::vector<std::pair<std::string, int64_t>>;

// The node's prefixes are all resident on worker w (a decode phase there reads them).
bool PrefixesOn(const KvLedger& kv, const Prefixes& prefixes, int w) {
  for (const auto& [key, tokens] : prefixes)
    if (!kv.FindPrefix(key, w)) return false;
  return true;
}

}  // namespace

int64_t CoreState::ResidentTokens(const std::vector<std::string>& keys, const Prefixes& prefixes,
                                  int w) const {
  int64_t tokens = 0;
  for (const std::string& key : keys) {
    const CtxRec* c = kv.Find(key);
    if (c && c->loc.tier == Tier::kHbm && c->loc.worker == w && c->transfer == 0)
      tokens += c->tokens;
  }
  for (const auto& [key, ptokens] : prefixes)
    if (kv.FindPrefix(key, w)) tokens += ptokens;
  return tokens;
}

PdModel CoreState::PdModelOf(const NodeRec& n, int64_t prompt) const {
  const std::string& model = n.spec.model_id();
  const ComputeCostModel& cost = CostOf(model);
  constexpr int64_t kProbe = 4096;  // a chunk's worth: the throughput of a long prefill
  PdModel m;
  m.kv_bytes_per_token = static_cast<double>(kv.BytesPerToken(model));
  m.prefill_tokens_per_s =
      static_cast<double>(kProbe) / std::max(1e-9, ToSeconds(cost.PrefillTime(kProbe, 0)));
  m.decode_step = cost.DecodeTime(1, prompt);
  m.streaming_overlap = 0;  // the move follows the prefill (see the file comment)
  return m;
}

std::vector<DecodeCandidate> CoreState::DecodeCandidates(const NodeRec& n, uint64_t growth,
                                                         const std::vector<std::string>& keys,
                                                         const Prefixes& prefixes) {
  std::vector<DecodeCandidate> out;
  for (int w = 0; w < static_cast<int>(workers.size()); ++w) {
    if (!Serves(w, n.spec.model_id()) || !Placeable(w) || PrefillOnly(w)) continue;
    if (!PrefixesOn(kv, prefixes, w)) continue;  // its decode would rebuild them
    const WorkerRec& wr = workers[static_cast<size_t>(w)];
    DecodeCandidate d;
    d.worker = w;
    d.resident_tokens = ResidentTokens(keys, prefixes, w);
    // A context held elsewhere (host, disk, another worker's HBM) is read back where that
    // beats recomputing it, as placement does (FitOn): resident, after its move.
    const ComputeCostModel& cost = CostOf(n.spec.model_id());
    for (const std::string& key : keys) {
      const CtxRec& c = *kv.Find(key);
      if (c.tokens == 0 || c.loc.tier == Tier::kNone || c.transfer != 0) continue;
      if (c.loc.tier == Tier::kHbm && c.loc.worker == w) continue;
      TransferEstimate e =
          planner->Estimate(c.loc, {Tier::kHbm, w}, c.bytes, TrafficClass::kLatency);
      if (!e.reachable || e.duration >= cost.PrefillTime(c.tokens, 0)) continue;
      d.resident_tokens += c.tokens;
      d.wait += e.duration;
    }
    d.decoding = wr.running;
    d.kv_free_bytes = kv.Free(w);
    std::optional<WorkerFit> fit = FitOn(n, w, growth, keys, prefixes);
    if (!fit || kv.Free(w) < fit->need) {
      // Busy: until the first of its running calls is expected to end.
      Duration wait = Duration::max();
      for (const auto& [id, ref] : wr.nodes) {
        const NodeRec& r = ref.wf->nodes[static_cast<size_t>(id.second)];
        wait = std::min(wait, std::max(Duration(0), r.started + r.est_run - now));
      }
      d.wait += wait == Duration::max() ? Seconds(1.0) : wait;
    }
    out.push_back(d);
  }
  return out;
}

std::vector<PrefillCandidate> CoreState::PrefillCandidates(
    const NodeRec& n, uint64_t growth, const std::vector<std::string>& keys,
    const Prefixes& prefixes, int64_t prompt, const PdModel& m,
    const std::vector<DecodeCandidate>& decode) {
  std::vector<PrefillCandidate> out;
  for (int p = 0; p < static_cast<int>(workers.size()); ++p) {
    if (!Serves(p, n.spec.model_id()) || !Placeable(p) || !PrefillOnly(p)) continue;
    std::optional<WorkerFit> fit = FitOn(n, p, growth, keys, prefixes);
    if (!fit || kv.Free(p) < fit->need) continue;  // cannot start it now
    PrefillCandidate c;
    c.worker = p;
    c.cached_tokens = ResidentTokens(keys, prefixes, p);
    // Its backlog: the prefill its running calls have left.
    int64_t backlog = 0;
    for (const auto& [id, ref] : workers[static_cast<size_t>(p)].nodes) {
      const NodeRec& r = ref.wf->nodes[static_cast<size_t>(id.second)];
      backlog +=
          std::max<int64_t>(0, r.recompute_at_place + r.new_tokens - r.new_done - r.prog_prefill);
    }
    c.wait = Seconds(static_cast<double>(backlog) / m.prefill_tokens_per_s);
    for (const DecodeCandidate& d : decode) {
      // The planner's estimate of the move, and of a byte (its queue and latency): the
      // link's rate is what the bytes add.
      const auto bytes = static_cast<uint64_t>(
          static_cast<double>(std::max<int64_t>(0, prompt - d.resident_tokens)) *
          m.kv_bytes_per_token);
      const Location src{Tier::kHbm, p}, dst{Tier::kHbm, d.worker};
      TransferEstimate one = planner->Estimate(src, dst, 1, TrafficClass::kLatency);
      TransferEstimate all =
          planner->Estimate(src, dst, std::max<uint64_t>(bytes, 1), TrafficClass::kLatency);
      const double busy = ToSeconds(all.duration) - ToSeconds(one.duration);
      c.link_queue.push_back(one.duration);
      c.link_bytes_per_s.push_back(!all.reachable ? 0
                                   : busy > 0     ? static_cast<double>(bytes) / busy
                                                  : 1e18);
    }
    out.push_back(std::move(c));
  }
  return out;
}

std::optional<bool> CoreState::RouteToPrefill(WfRec& wf, int idx, uint64_t growth,
                                              const std::vector<std::string>& keys,
                                              const Prefixes& prefixes) {
  NodeRec& n = wf.nodes[static_cast<size_t>(idx)];
  if (opt.disaggregation == Disaggregation::kColocated || opt.worker_roles.empty())
    return std::nullopt;
  // Only a fresh call that writes its own context is routed (a resumed or handed-off one
  // continues where its KV is).
  if (n.pd != PdPhase::kNone || n.resumed || n.new_done > 0 || n.out_done > 0 || keys.empty() ||
      !ExtendsPrimary(n))
    return std::nullopt;
  bool any_prefill = false;
  for (int p = 0; p < static_cast<int>(workers.size()); ++p)
    any_prefill |= PrefillOnly(p) && Placeable(p) && Serves(p, n.spec.model_id());
  if (!any_prefill) return std::nullopt;  // none in service: colocated on the others
  int64_t prompt = n.new_tokens;
  for (const std::string& key : keys) prompt += kv.At(key).tokens;
  for (const auto& [key, tokens] : prefixes) prompt += tokens;
  PdCall call{prompt, opt.default_max_output_tokens};
  if (auto mean = output_mean.find(n.spec.model_id()); mean != output_mean.end())
    call.output_tokens = static_cast<int64_t>(mean->second);
  std::vector<DecodeCandidate> decode = DecodeCandidates(n, growth, keys, prefixes);
  const PdModel model = PdModelOf(n, prompt);
  std::vector<PrefillCandidate> prefill =
      PrefillCandidates(n, growth, keys, prefixes, prompt, model, decode);
  if (prefill.empty())  // every prefill worker is full or busy
    return opt.disaggregation == Disaggregation::kAlways ? std::optional<bool>(false)
                                                         : std::nullopt;
  PrefillChoice choice = ChoosePrefill(call, decode, prefill, model, opt.disaggregation);
  if (!choice.disaggregate) return std::nullopt;
  std::optional<int64_t> recompute = ReadyContexts(n, choice.prefill_worker, keys);
  if (!recompute) return false;  // placed when the moves commit
  n.pd = PdPhase::kPrefill;
  Place(wf, idx, choice.prefill_worker, *recompute);
  return true;
}

void CoreState::MaybeHandOff(WfRec& wf, int idx, const SeqStep& st) {
  NodeRec& n = wf.nodes[static_cast<size_t>(idx)];
  if (n.pd != PdPhase::kPrefill || st.finished || n.state != NState::kRunning ||
      !PrefillOnly(n.worker))
    return;
  if (st.prefill_done < n.recompute_at_place + n.new_tokens - n.new_done) return;
  ++pd_stats.handoffs;
  n.pd = PdPhase::kDecode;
  PreemptNode(wf, idx, st.prefill_done, st.output_done, kHandOff);
}

void CoreState::CountHandOffMove(const NodeRec& n, Location src, uint64_t bytes, bool moved) {
  if (n.pd != PdPhase::kDecode || src.tier != Tier::kHbm || !PrefillOnly(src.worker)) return;
  if (moved) {
    ++pd_stats.moves;
    pd_stats.bytes_moved += bytes;
  } else {
    ++pd_stats.recomputed_on_decode;
  }
}

}  // namespace switchyard::scheduler::internal
