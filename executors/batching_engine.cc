#include "executors/simulated_engine.h"

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
  for (size_t i = 0; i < s.members.size(); ++i) {
    Member& m = s.members[i];
    Context& c = *Hold(m.key);
    m.ctx = &c;
    SetTokens(&c, plan.after[i]);
    ++c.users;
    if (static_cast<int>(i) == s.primary) c.extended = true;
    s.cached += m.base;
    s.rebuild += m.rebuild;
  }
  order_.push_back(&s);
  seqs_.emplace(s.key, std::move(seq));
  Wake();
  return Status::OK();
}

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

// ---- Steps -------------------------------------------------------------------------------

void BatchingEngine::Wake() {
  if (step_running_ || kick_timer_ != kNoTimer || order_.empty()) return;
  kick_timer_ = loop_->PostAt(loop_->Now(), [this]() {
    kick_timer_ = kNoTimer;
    StartStep();
  });
}

// Whether the output token `s` emits this step will have a KV slot: false when it needs a
// new block and none is left after the other sequences of the step. The slot itself is
// taken when the step ends (EndStep), so between steps the pool holds exactly what the
// reports so far said; a block taken meanwhile (an Admit, an Import) makes the token wait.
bool BatchingEngine::TakeOutputSlot(Seq& s) {
  Context* p = s.members[s.primary].ctx;
  bool new_block = p->tokens % limits_.block_tokens == 0;
  if (new_block && FreeBlocks() - step_new_blocks_ < 1) return false;
  step_new_blocks_ += new_block ? 1 : 0;
  return true;
}

bool BatchingEngine::AddDecode(Seq& s, int64_t* budget) {
  if (!TakeOutputSlot(s)) {
    report_.exhausted.push_back(s.key);
    return false;
  }
  shape_.decode_seqs += 1;
  shape_.kv_tokens_read += SeqKv(s);
  s.batch_index = static_cast<int>(batch_.size());
  batch_.push_back(Entry{&s, 0, true});
  *budget -= 1;
  return true;
}

bool BatchingEngine::AddChunk(Seq& s, int64_t* budget) {
  int64_t n = std::min(s.prefill_total - s.prefill_done, *budget);
  bool completes = s.prefill_done + n == s.prefill_total;
  if (completes && !TakeOutputSlot(s)) {
    report_.exhausted.push_back(s.key);
    return false;
  }
  int64_t c = SeqKv(s);
  shape_.prefill_tokens += n;
  shape_.kv_tokens_read += c;
  shape_.prefill_attention +=
      static_cast<double>(n) * (static_cast<double>(c) + static_cast<double>(n + 1) / 2.0);
  s.batch_index = static_cast<int>(batch_.size());
  batch_.push_back(Entry{&s, n, completes});
  *budget -= n;
  return true;
}

void BatchingEngine::StartStep() {
  if (step_running_) return;
  batch_.clear();
  shape_ = StepShape{};
  report_.exhausted.clear();
  step_new_blocks_ = 0;
  int64_t budget = limits_.max_num_batched_tokens;
  const size_t cap = static_cast<size_t>(limits_.max_num_seqs);
  for (Seq* s : order_) {  // decodes first
    if (batch_.size() >= cap || budget <= 0) break;
    if (s->prefill_done >= s->prefill_total) AddDecode(*s, &budget);
  }
  for (Seq* s : order_) {  // then prefill chunks
    if (batch_.size() >= cap || budget <= 0) break;
    if (s->prefill_done < s->prefill_total) AddChunk(*s, &budget);
  }
  Time now = loop_->Now();
  if (batch_.empty()) {  // nothing can run: report the stall once and wait for a change
    if (!report_.exhausted.empty()) {
      shape_ = StepShape{};
      report_.seqs.clear();
      Emit(now, now);
    }
    return;
  }
  step_start_ = now;
  step_running_ = true;
  if (runner_->computes()) BuildItems();
  runner_->Run(shape_, &items_, [this]() { EndStep(); });
}

// The positions each batched sequence computes: its chunk of the prefill stream (rebuilt
// contexts first, in order, then the new tokens in the primary), or its decode row.
void BatchingEngine::SpansOf(const Seq& s, const Entry& e, StepItem* item) const {
  item->spans.clear();
  const Member& p = s.members[s.primary];
  auto add = [&](const Member& m, int64_t from, int64_t to) {
    if (to <= from) return;
    if (!item->spans.empty() && item->spans.back().context == &m.key &&
        item->spans.back().to == from) {
      item->spans.back().to = to;
      return;
    }
    item->spans.push_back(StepSpan{&m.key, from, to});
  };
  const int64_t fresh_at = p.base + p.rebuild;  // the new tokens follow in the primary
  if (e.chunk == 0) {                           // a decode: the token emitted last
    add(p, std::max<int64_t>(0, p.ctx->tokens - 1), p.ctx->tokens);
    item->emit_position = p.ctx->tokens;
  } else {
    const int64_t x0 = s.prefill_done, x1 = s.prefill_done + e.chunk;
    int64_t acc = 0;
    for (const Member& m : s.members) {  // rebuilt contexts: positions [0, rebuild)
      add(m, std::max<int64_t>(0, x0 - acc), std::min(m.rebuild, x1 - acc));
      acc += m.rebuild;
    }
    add(p, fresh_at + std::max<int64_t>(0, x0 - acc), fresh_at + (x1 - acc));
    item->emit_position = fresh_at + (x1 - acc);
  }
  item->emits = e.emits;
}

void BatchingEngine::BuildItems() {
  if (items_.size() < batch_.size()) items_.resize(batch_.size());
  for (size_t i = 0; i < batch_.size(); ++i) {
    const Entry& e = batch_[i];
    StepItem& it = items_[i];
    it.seq = &e.seq->key;
    it.primary = &e.seq->members[e.seq->primary].key;
    it.token = -1;
    it.eos = false;
    it.status = Status::OK();
    SpansOf(*e.seq, e, &it);
  }
  items_.resize(batch_.size());
}

void BatchingEngine::ApplyProgress(size_t index, size_t* reported) {
  Entry& e = batch_[index];
  Seq& s = *e.seq;
  const StepItem* item = runner_->computes() ? &items_[index] : nullptr;
  bool eos = false;
  s.batch_index = -1;
  s.prefill_done += e.chunk;
  bool took = e.chunk > 0;  // a chunk's blocks were taken at admission: report it anyway
  if (e.emits) {
    Context* p = s.members[s.primary].ctx;
    bool new_block = p->tokens % limits_.block_tokens == 0;
    if (new_block && FreeBlocks() < 1) {
      report_.exhausted.push_back(s.key);  // its block went to an Admit during the step
    } else {
      if (item) runner_->OnEmitted(*p->key, p->tokens, item->token);
      SetTokens(p, p->tokens + 1);
      s.output_done += 1;
      took = took || new_block;
      eos = item && item->eos;
    }
  }
  SeqProgress& p = report_.seqs[(*reported)++];
  p.changed = took;
  p.key.assign(s.key);
  p.prefill_done = s.prefill_done;
  p.output_done = s.output_done;
  p.finished = false;
  p.token = item && e.emits ? item->token : -1;
  p.status = Status::OK();
  if (item && !item->status.ok()) {
    s.finished = p.finished = true;
    p.status = item->status;
  } else if (s.prefill_done >= s.prefill_total && (s.output_done >= s.output_target || eos)) {
    s.finished = p.finished = true;
    if (options_.fault) p.status = options_.fault(s.key);
  }
}

void BatchingEngine::RemoveFinished() {
  size_t kept = 0;
  for (Seq* s : order_) {
    if (!s->finished) {
      order_[kept++] = s;
      continue;
    }
    Leave(*s);
    seqs_.erase(seqs_.find(s->key));
  }
  order_.resize(kept);
}

void BatchingEngine::EndStep() {
  step_running_ = false;
  if (report_.seqs.size() < batch_.size()) report_.seqs.resize(batch_.size());
  size_t reported = 0;
  bool any_finished = false;
  for (size_t i = 0; i < batch_.size(); ++i) {
    if (!batch_[i].seq) continue;
    ApplyProgress(i, &reported);
    any_finished |= batch_[i].seq->finished;
  }
  report_.seqs.resize(reported);
  if (any_finished) RemoveFinished();
  batch_.clear();
  Emit(step_start_, loop_->Now());
  Wake();
}

void BatchingEngine::Emit(Time start, Time end) {
  report_.worker = worker_;
  report_.start = start;
  report_.end = end;
  report_.prefill_tokens = shape_.prefill_tokens;
  report_.decode_seqs = shape_.decode_seqs;
  report_.kv_tokens_read = shape_.kv_tokens_read;
  report_.blocks_used = blocks_used_;
  report_.blocks_total = limits_.pool_blocks;
  if (listener_) listener_(report_);
}

}  // namespace switchyard::executors
