// BatchingEngine (batching_engine.h): admission, preemption, imports and releases — the
// KV block accounting; the steps are in batching_engine_steps.cc.
#include "executors/batching_engine.h"

#include <algorithm>

namespace switchyard::executors {

namespace {
EngineLimits Sane(EngineLimits l) {
  l.max_num_batched_tokens = std::max<int64_t>(1, l.max_num_batched_tokens);
  l.max_num_seqs = std::max(1, l.max_num_seqs);
  l.block_tokens = std::max<int64_t>(1, l.block_tokens);
  l.pool_blocks = std::max<int64_t>(0, l.pool_blocks);
  return l;
}

std::string Quote(const std::string& s) { return "'" + s + "'"; }
}  // namespace

// What Admit allocates: every member with its size after the prefill.
struct BatchingEngine::Plan {
  std::vector<Member> members;
  std::vector<int64_t> after;  // tokens of members[i] once the prefill is done
  int primary = -1;
  bool private_ctx = false;
  int64_t blocks = 0;  // net blocks to allocate
};

BatchingEngine::BatchingEngine(EventLoop* loop, int worker, EngineLimits limits,
                               std::unique_ptr<StepRunner> runner, Options o)
    : loop_(loop),
      worker_(worker),
      limits_(Sane(limits)),
      runner_(std::move(runner)),
      options_(std::move(o)) {}

BatchingEngine::~BatchingEngine() {
  if (kick_timer_ != kNoTimer) loop_->Cancel(kick_timer_);
  runner_->Stop();
}

std::string BatchingEngine::Who() const {
  return std::string(runner_->engine_name()) + " (worker " + std::to_string(worker_) + ")";
}

BatchingEngine::Context* BatchingEngine::Hold(const std::string& key) {
  auto [it, inserted] = contexts_.try_emplace(key);
  if (inserted) it->second.key = &it->first;
  return &it->second;
}

int64_t BatchingEngine::context_tokens(const std::string& context) const {
  auto it = contexts_.find(context);
  return it == contexts_.end() ? -1 : it->second.tokens;
}

void BatchingEngine::SetTokens(Context* c, int64_t tokens) {
  if (tokens == c->tokens) return;
  blocks_used_ +=
      BlocksFor(tokens, limits_.block_tokens) - BlocksFor(c->tokens, limits_.block_tokens);
  c->tokens = tokens;
  runner_->OnResize(*c->key, tokens);
}

// ---- Admit -------------------------------------------------------------------------------

Status BatchingEngine::Validate(const SequenceSpec& s) const {
  auto bad = [&](const std::string& what) {
    return Status::InvalidArgument(Who() + ": sequence " + Quote(s.key) + ": " + what);
  };
  if (s.key.empty()) return bad("empty key");
  if (seqs_.count(s.key))
    return Status::AlreadyExists(Who() + ": sequence " + Quote(s.key) + " is already running");
  if (s.prefill_tokens < 0) return bad("prefill_tokens < 0");
  if (s.max_output_tokens < 1) return bad("max_output_tokens < 1");
  if (s.output_done < 0 || s.output_done >= s.max_output_tokens)
    return bad("output_done must be in [0, max_output_tokens)");
  if (s.actual_output_tokens < 0) return bad("actual_output_tokens < 0");
  int64_t rebuild = 0;
  for (size_t i = 0; i < s.contexts.size(); ++i) {
    const SeqContext& c = s.contexts[i];
    if (c.key.empty()) return bad("context " + std::to_string(i) + " has an empty key");
    if (c.tokens < 0) return bad("context " + Quote(c.key) + " has tokens < 0");
    for (size_t j = 0; j < i; ++j)
      if (s.contexts[j].key == c.key) return bad("context " + Quote(c.key) + " listed twice");
    if (c.keep_only && (i > 0 || !s.extends_primary))
      return bad("context " + Quote(c.key) + " is cut (keep_only) but is not the extended primary");
    if (!c.resident) rebuild += c.tokens;
  }
  if (rebuild > s.prefill_tokens)
    return bad("prefill_tokens " + std::to_string(s.prefill_tokens) +
               " is less than the rebuilt contexts' " + std::to_string(rebuild) + " tokens");
  return Status::OK();
}

Status BatchingEngine::PlanAdmit(const SequenceSpec& s, Plan* plan) const {
  auto refuse = [&](const std::string& what) {
    return Status::FailedPrecondition(Who() + ": sequence " + Quote(s.key) + ": " + what);
  };
  int64_t rebuild = 0;
  for (const SeqContext& c : s.contexts)
    if (!c.resident) rebuild += c.tokens;
  const int64_t fresh = s.prefill_tokens - rebuild;  // the node's new tokens
  const int64_t bt = limits_.block_tokens;
  plan->primary = !s.contexts.empty() && s.extends_primary ? 0 : -1;
  for (size_t i = 0; i < s.contexts.size(); ++i) {
    const SeqContext& c = s.contexts[i];
    auto it = contexts_.find(c.key);
    const Context* held = it == contexts_.end() ? nullptr : &it->second;
    Member m;
    m.key = c.key;
    if (c.resident) {
      if (!held) return refuse("resident context " + Quote(c.key) + " is not in the pool");
      if (held->tokens < c.tokens)
        return refuse("resident context " + Quote(c.key) + " holds " +
                      std::to_string(held->tokens) + " tokens, the sequence reads " +
                      std::to_string(c.tokens));
      m.base = held->tokens;
      if (c.keep_only && held->tokens > c.tokens) {
        if (held->users > 0)
          return refuse("context " + Quote(c.key) + " is cut to " + std::to_string(c.tokens) +
                        " tokens but a running sequence reads it");
        m.base = c.tokens;  // Admit's SetTokens drops the rest
      }
    } else {
      if (held && held->users > 0)
        return refuse("context " + Quote(c.key) + " is rebuilt but a running sequence uses it");
      m.rebuild = c.tokens;
    }
    bool primary = static_cast<int>(i) == plan->primary;
    if (primary && held && held->extended)
      return refuse("context " + Quote(c.key) + " is already extended by a running sequence");
    int64_t after = m.base + m.rebuild + (primary ? fresh : 0);
    plan->blocks += BlocksFor(after, bt) - BlocksFor(held ? held->tokens : 0, bt);
    plan->members.push_back(std::move(m));
    plan->after.push_back(after);
  }
  if (plan->primary < 0) {  // the sequence's own tokens live in a private context
    if (contexts_.count(s.key))
      return refuse("its private context collides with a held context of the same key");
    Member m;
    m.key = s.key;
    plan->primary = static_cast<int>(plan->members.size());
    plan->private_ctx = true;
    plan->blocks += BlocksFor(fresh, bt);
    plan->members.push_back(std::move(m));
    plan->after.push_back(fresh);
  }
  if (plan->blocks > FreeBlocks())
    return refuse("needs " + std::to_string(plan->blocks) + " KV blocks, " +
                  std::to_string(FreeBlocks()) + " of " + std::to_string(limits_.pool_blocks) +
                  " free");
  return Status::OK();
}

Status BatchingEngine::Admit(const SequenceSpec& spec) {
  SY_RETURN_IF_ERROR(Validate(spec));
  Plan plan;
  SY_RETURN_IF_ERROR(PlanAdmit(spec, &plan));
  auto seq = std::make_unique<Seq>();
  Seq& s = *seq;
  s.key = spec.key;
  s.primary = plan.primary;
  s.private_ctx = plan.private_ctx;
  s.prefill_total = spec.prefill_tokens;
  s.output_start = s.output_done = spec.output_done;
  s.output_target = spec.actual_output_tokens > 0
                        ? std::min(spec.actual_output_tokens, spec.max_output_tokens)
                        : spec.max_output_tokens;
  const Member& pm = plan.members[plan.primary];
  SY_RETURN_IF_ERROR(runner_->OnAdmit(spec, pm.key, pm.base + pm.rebuild));
  s.members = std::move(plan.members);
  for (const Member& m : s.members) s.rebuild += m.rebuild;
  // Before the resizes: the runner takes the blocks it matched before anything allocates.
  s.hit = s.prefill_done = MatchPrefixes(s, spec.prefill_tokens - s.rebuild, spec.priority);
  for (size_t i = 0; i < s.members.size(); ++i) {
    Member& m = s.members[i];
    Context& c = *Hold(m.key);
    m.ctx = &c;
    SetTokens(&c, plan.after[i]);
    ++c.users;
    if (static_cast<int>(i) == s.primary) c.extended = true;
    s.cached += m.base;
  }
  order_.push_back(&s);
  seqs_.emplace(s.key, std::move(seq));
  Wake();
  return Status::OK();
}

// The prefill stream (the rebuilt contexts from position 0, in order, then the new tokens in
// the primary) is matched from its start, one context after the other while each was found
// whole; the last token is always computed (its logits give the first output token, as
// vLLM recomputes the last token of a fully cached prompt).
int64_t BatchingEngine::MatchPrefixes(const Seq& s, int64_t fresh, int priority) {
  if (!runner_->caches_prefixes() || s.prefill_total <= 0) return 0;
  const int64_t budget = s.prefill_total - 1;
  int64_t hit = 0;
  auto whole = [&](const Member& m, int64_t from, int64_t n) {  // false: the match stops
    if (n <= 0) return true;
    const int64_t limit = from + std::min(n, budget - hit);
    const int64_t h =
        limit > from ? std::clamp(runner_->MatchPrefix(m.key, from, limit, priority), from, limit)
                     : from;
    hit += h - from;
    return h == from + n;
  };
  bool on = true;
  for (const Member& m : s.members) on = on && whole(m, 0, m.rebuild);
  const Member& p = s.members[s.primary];
  if (on) whole(p, p.base + p.rebuild, fresh);
  pending_queries_ += s.prefill_total;
  pending_hits_ += hit;
  return hit;
}

void BatchingEngine::SetModelEpoch(uint64_t epoch) { runner_->OnModelEpoch(epoch); }

// ---- Preempt / Import / Release ------------------------------------------------------------

void BatchingEngine::ShrinkToComputed(Seq& s) {
  // The prefill computes the rebuilt contexts first, in order, then the new tokens.
  int64_t left = s.prefill_done;
  const int64_t fresh_done = std::max<int64_t>(0, s.prefill_done - s.rebuild);
  for (size_t i = 0; i < s.members.size(); ++i) {
    Member& m = s.members[i];
    int64_t done = std::min(m.rebuild, left);
    left -= done;
    int64_t target = m.base + done;
    if (static_cast<int>(i) == s.primary)
      target += fresh_done + Produced(s);
    else if (m.rebuild == 0)
      continue;  // only read: untouched
    SetTokens(m.ctx, std::min(m.ctx->tokens, target));
  }
}

void BatchingEngine::Leave(Seq& s) {
  runner_->OnLeave(s.key);
  for (size_t i = 0; i < s.members.size(); ++i) {
    Context* c = s.members[i].ctx;
    --c->users;
    if (static_cast<int>(i) == s.primary) c->extended = false;
  }
  if (s.private_ctx) {
    Member& p = s.members[s.primary];
    SetTokens(p.ctx, 0);
    contexts_.erase(p.key);
  }
}

Result<SeqProgress> BatchingEngine::Preempt(const std::string& key) {
  auto it = seqs_.find(key);
  if (it == seqs_.end()) return Status::NotFound(Who() + ": no running sequence " + Quote(key));
  Seq& s = *it->second;
  if (s.batch_index >= 0) batch_[s.batch_index].seq = nullptr;  // drop its step progress
  SeqProgress p;
  p.key = key;
  p.prefill_done = s.prefill_done;
  p.output_done = s.output_done;
  ShrinkToComputed(s);
  Leave(s);
  order_.erase(std::find(order_.begin(), order_.end(), &s));
  seqs_.erase(it);
  Wake();
  return p;
}

Status BatchingEngine::Import(const std::string& context, int64_t tokens) {
  std::string who = Who() + ": import of ";
  if (context.empty()) return Status::InvalidArgument(who + "an empty context key");
  if (tokens < 0) return Status::InvalidArgument(who + Quote(context) + ": tokens < 0");
  auto it = contexts_.find(context);
  int64_t before = it == contexts_.end() ? 0 : it->second.tokens;
  if (it != contexts_.end() && it->second.users > 0)
    return Status::FailedPrecondition(who + Quote(context) + ": a running sequence uses it");
  int64_t need = BlocksFor(tokens, limits_.block_tokens) - BlocksFor(before, limits_.block_tokens);
  if (need > FreeBlocks())
    return Status::FailedPrecondition(who + Quote(context) + ": needs " + std::to_string(need) +
                                      " KV blocks, " + std::to_string(FreeBlocks()) + " of " +
                                      std::to_string(limits_.pool_blocks) + " free");
  SetTokens(Hold(context), tokens);
  Wake();
  return Status::OK();
}

Status BatchingEngine::Release(const std::string& context) {
  auto it = contexts_.find(context);
  if (it == contexts_.end()) return Status::OK();
  if (it->second.users > 0)
    return Status::FailedPrecondition(Who() + ": release of " + Quote(context) + ": " +
                                      std::to_string(it->second.users) +
                                      " running sequence(s) use it");
  SetTokens(&it->second, 0);
  contexts_.erase(it);
  Wake();
  return Status::OK();
}

Status BatchingEngine::Reset() {
  if (!seqs_.empty())
    return Status::FailedPrecondition(Who() + ": reset with " + std::to_string(seqs_.size()) +
                                      " running sequence(s)");
  contexts_.clear();
  blocks_used_ = 0;
  return Status::OK();
}

}  // namespace switchyard::executors
