// CpuStepRunner (cpu_step_runner.h).
#include "cpu_engine/cpu_step_runner.h"

#include <algorithm>
#include <limits>

#include "base/thread_name.h"
#include "cpu_engine/cpu_engine.h"
#include "executors/batching_engine.h"

namespace switchyard::cpu_engine {

uint64_t SplitMix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

Status RecordAdmit(TokenLog* log, int64_t vocab, const executors::SequenceSpec& spec,
                   const std::string& primary, int64_t fresh_from) {
  int64_t rebuild = 0;
  for (const executors::SeqContext& c : spec.contexts) {
    std::vector<int32_t>& l = log->Of(c.key);
    for (int64_t p = static_cast<int64_t>(l.size()); p < c.tokens; ++p)
      l.push_back(TokenLog::Synthetic(c.key, p, vocab));  // a context this engine never saw
    if (!c.resident) rebuild += c.tokens;
  }
  const int64_t fresh = spec.prefill_tokens - rebuild;
  const auto& ids = spec.prompt_token_ids;
  if (!ids.empty() && static_cast<int64_t>(ids.size()) != fresh)
    return Status::InvalidArgument("cpu engine: sequence '" + spec.key + "' has " +
                                   std::to_string(ids.size()) + " prompt token ids for " +
                                   std::to_string(fresh) + " new tokens");
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= vocab)
      return Status::InvalidArgument(
          "cpu engine: sequence '" + spec.key + "': prompt token " + std::to_string(i) + " is " +
          std::to_string(ids[i]) + ", outside the model's vocabulary of " + std::to_string(vocab));
  std::vector<int32_t>& l = log->Of(primary);
  for (int64_t p = static_cast<int64_t>(l.size()); p < fresh_from; ++p)
    l.push_back(TokenLog::Synthetic(primary, p, vocab));
  l.resize(static_cast<size_t>(fresh_from));
  for (int64_t i = 0; i < fresh; ++i)
    l.push_back(ids.empty() ? TokenLog::Synthetic(primary, fresh_from + i, vocab) : ids[i]);
  return Status::OK();
}

Result<std::optional<ChoiceConstraint>> CpuStepRunner::ChoiceFor(
    const executors::SequenceSpec& spec, const std::string& primary) const {
  if (spec.choices.empty()) return std::optional<ChoiceConstraint>();
  const std::string who = "cpu engine: sequence '" + spec.key + "'";
  if (!spec.json_schema.empty())
    return Status::InvalidArgument(who + " asks for both a JSON schema and a choice");
  if (token_bytes_.empty())
    return Status::InvalidArgument(who + " asks for a guided choice, but the engine has no " +
                                   "token bytes (CpuEngine::Options::token_bytes)");
  ChoiceConstraint c(spec.choices);
  const std::vector<int32_t>* l = log_->Find(primary);
  const size_t done = static_cast<size_t>(spec.output_done);
  if (done > 0 && (!l || l->size() < done))
    return Status::InvalidArgument(who + " continues after " + std::to_string(done) +
                                   " output tokens its token log does not hold");
  for (size_t i = done > 0 ? l->size() - done : 0; done > 0 && i < l->size(); ++i) {
    const int32_t t = (*l)[i];
    const bool ok = t >= 0 && static_cast<size_t>(t) < token_bytes_.size();
    if (!ok || !c.Feed(token_bytes_[static_cast<size_t>(t)]))
      return Status::InvalidArgument(who + ": its earlier output does not begin a choice");
  }
  return std::optional<ChoiceConstraint>(std::move(c));
}

Result<std::optional<JsonObjectConstraint>> CpuStepRunner::ConstraintFor(
    const executors::SequenceSpec& spec, const std::string& primary) const {
  if (spec.json_schema.empty()) return std::optional<JsonObjectConstraint>();
  const std::string who = "cpu engine: sequence '" + spec.key + "'";
  if (!trie_)
    return Status::InvalidArgument(who +
                                   " asks for JSON-constrained output, but the engine has no "
                                   "token bytes (CpuEngine::Options::token_bytes)");
  Result<JsonObjectConstraint> c = JsonObjectConstraint::FromSchema(spec.json_schema);
  if (!c.ok()) return Status::InvalidArgument(who + ": " + c.status().message());
  // A readmitted sequence continues its output: its earlier tokens end the primary's log.
  const size_t done = static_cast<size_t>(spec.output_done);
  if (done == 0) return std::optional<JsonObjectConstraint>(std::move(*c));
  const std::vector<int32_t>* l = log_->Find(primary);
  if (!l || l->size() < done)
    return Status::InvalidArgument(who + " continues after " + std::to_string(done) +
                                   " output tokens, but the token log of '" + primary + "' holds " +
                                   std::to_string(l ? l->size() : 0));
  for (size_t i = l->size() - done; i < l->size(); ++i) {
    const int32_t t = (*l)[i];
    const bool ok = t >= 0 && static_cast<size_t>(t) < token_bytes_.size();
    if (!ok || !c->Feed(token_bytes_[static_cast<size_t>(t)]))
      return Status::InvalidArgument(who + ": its earlier output token " + std::to_string(t) +
                                     " does not continue a JSON object of its schema");
  }
  return std::optional<JsonObjectConstraint>(std::move(*c));
}

Status CpuStepRunner::OnAdmit(const executors::SequenceSpec& spec, const std::string& primary,
                              int64_t fresh_from) {
  SY_ASSIGN_OR_RETURN(std::optional<JsonObjectConstraint> json, ConstraintFor(spec, primary));
  SY_ASSIGN_OR_RETURN(std::optional<ChoiceConstraint> choice, ChoiceFor(spec, primary));
  SY_RETURN_IF_ERROR(RecordAdmit(log_, model_->shape().vocab_size, spec, primary, fresh_from));
  Params p{spec.temperature, spec.top_p,      spec.sampling_seed,
           spec.stop_at_eos, spec.token_mask, std::move(json)};
  // An answer to a text prompt (the front doors'; a node given as token counts decodes to
  // its max_output_tokens, as a trace recorded it): where it starts, so its first token is
  // never cut.
  p.text = !spec.prompt_token_ids.empty();
  if (spec.output_done == 0) p.answer_start = static_cast<int64_t>(log_->Of(primary).size());
  p.bias = spec.logit_bias;
  p.choice = std::move(choice);
  if (p.json || p.choice) constrained_[primary] = spec.key;
  params_[spec.key] = std::move(p);
  // The sequence's priority and offload limit go with the blocks of every context it names;
  // its load limits hold for the match that follows (MatchPrefix).
  const Tags tags{spec.priority, spec.kv_transfer.max_offload_tokens};
  load_budget_ = spec.kv_transfer.max_load_tokens;
  load_host_ = spec.kv_transfer.load_from_host;
  pending_tags_.clear();
  auto note = [&](const std::string& key) {
    if (Ctx* c = Find(key)) {
      c->priority = tags.priority;
      c->offload_limit = tags.offload_limit;
    } else {
      pending_tags_[key] = tags;
    }
  };
  note(primary);
  for (const executors::SeqContext& c : spec.contexts) note(c.key);
  if (Ctx* c = Find(primary)) Invalidate(*c, fresh_from);  // its ids from here on are new
  return Status::OK();
}

void CpuStepRunner::OnLeave(const std::string& seq) {
  for (auto it = constrained_.begin(); it != constrained_.end(); ++it)
    if (it->second == seq) {
      constrained_.erase(it);
      break;
    }
  params_.erase(seq);
}

void CpuStepRunner::OnEmitted(const std::string& primary, int64_t position, int32_t token) {
  std::vector<int32_t>& l = log_->Of(primary);
  l.resize(static_cast<size_t>(position));
  l.push_back(token);
  if (Ctx* ctx = Find(primary); ctx && ctx->valid > position) Invalidate(*ctx, position);
  auto c = constrained_.find(primary);
  if (c == constrained_.end()) return;
  auto p = params_.find(c->second);
  // The step chose the token among those its constraint allowed (a stop id that ended a
  // stuck sequence has no bytes).
  if (p == params_.end() || token < 0 || static_cast<size_t>(token) >= token_bytes_.size()) return;
  const std::string& bytes = token_bytes_[static_cast<size_t>(token)];
  if (p->second.json) (void)p->second.json->Feed(bytes);
  if (p->second.choice) (void)p->second.choice->Feed(bytes);
}

// ---- Steps -----------------------------------------------------------------------------

Status CpuStepRunner::AddSpan(const executors::StepSpan& span, bool logits, Job* job) {
  const std::string& key = *span.context;
  Ctx* c = Find(key);
  if (!c) return Status::Internal("cpu engine: context '" + key + "' has no KV in the pool");
  SY_RETURN_IF_ERROR(EnsureBlocks(key, *c));
  const std::vector<int32_t>* l = log_->Find(key);
  if (!l || static_cast<int64_t>(l->size()) < span.to)
    return Status::Internal("cpu engine: context '" + key + "' has no token id at position " +
                            std::to_string(span.to - 1));
  const int64_t from = std::min(span.from, c->valid);  // and what an earlier call left
  job->tables.push_back(c->blocks);
  const std::vector<float*>& t = job->tables.back();
  for (int64_t p = from; p < span.to; ++p) {
    Row r;
    r.token = (*l)[p];
    r.position = p;
    r.kv = KvBlocks{t.data(), static_cast<int64_t>(t.size()), block_tokens_};
    r.want_logits = logits && p == span.to - 1;
    job->rows.push_back(r);
  }
  job->spans.push_back(Job::Span{key, span.to, c->cuts});
  busy_.insert(key);
  return Status::OK();
}

void CpuStepRunner::Run(const executors::StepShape&, std::vector<executors::StepItem>* items,
                        std::function<void()> done) {
  auto job = std::make_shared<Job>();
  size_t rows = 0;
  for (const executors::StepItem& it : *items)
    for (const executors::StepSpan& s : it.spans) rows += static_cast<size_t>(s.to - s.from);
  job->tables.reserve(items->size() * 2);
  job->rows.reserve(rows + items->size());
  for (size_t i = 0; i < items->size(); ++i) {
    executors::StepItem& it = (*items)[i];
    bool has_logits = false;
    for (size_t k = 0; k < it.spans.size() && it.status.ok(); ++k) {
      bool last = it.emits && k + 1 == it.spans.size() && *it.spans[k].context == *it.primary;
      it.status = AddSpan(it.spans[k], last, job.get());
      has_logits |= last && it.status.ok();
    }
    if (!it.status.ok() || !it.emits) continue;
    if (!has_logits) {  // nothing to feed (an empty context): end the sequence
      it.token = model_->shape().eos_id;
      it.eos = true;
      continue;
    }
    auto p = params_.find(*it.seq);
    job->emits.push_back(Emit{i, p == params_.end() ? Params{} : p->second, it.emit_position});
  }
  auto alive = alive_;
  std::lock_guard<std::mutex> lock(mu_);
  queue_.push_back([this, job, items, alive, done = std::move(done)]() {
    Compute(job.get());
    loop_->Post([this, job, items, alive, done]() {
      if (!alive->load()) return;
      Finish(items, *job);
      done();
    });
  });
  cv_.notify_one();
}

const std::vector<bool>* CpuStepRunner::StaticMask(int mask) const {
  mask = std::max(0, mask);
  return mask < static_cast<int>(masks_.size()) ? &masks_[static_cast<size_t>(mask)] : nullptr;
}

// A random-weights model's answer ends here instead of with `token`
// (ModelShape::mean_answer_tokens), after its first token: with probability 1/N, from a draw of the
// sampling seed (none when greedy, so a greedy answer depends on its context only), the position
// and the token the step chose.
bool CpuStepRunner::EndsAnswer(const Params& p, int32_t token, int64_t position) const {
  const ModelShape& shape = model_->shape();
  if (shape.mean_answer_tokens <= 0 || !p.text || p.json || p.choice || !p.stop_at_eos ||
      shape.eos_id < 0 || position <= p.answer_start)  // an answer has one token at least
    return false;
  const uint64_t seed = p.temperature > 0 ? p.seed : 0;
  const uint64_t draw = SplitMix(
      seed ^ SplitMix(static_cast<uint64_t>(position) ^ (static_cast<uint64_t>(token) << 32)));
  return draw % static_cast<uint64_t>(shape.mean_answer_tokens) == 0;
}

size_t CpuStepRunner::MaskRow(const Params& p, float* row, std::vector<uint8_t>* allowed) const {
  const size_t vocab = static_cast<size_t>(model_->shape().vocab_size);
  for (const auto& [t, b] : p.bias)
    if (t >= 0 && static_cast<size_t>(t) < vocab) row[t] += b;
  const std::vector<bool>* mask = StaticMask(p.mask);
  if (p.json) p.json->AllowedTokens(*trie_, allowed);
  if (p.choice) p.choice->AllowedTokens(token_bytes_, allowed);
  const bool constrained = p.json || p.choice;
  size_t kept = 0;
  for (size_t t = 0; t < vocab; ++t) {
    bool ok = !mask || (t < mask->size() && (*mask)[t]);
    if (constrained) ok = ok && t < allowed->size() && (*allowed)[t];
    if (!ok)
      row[t] = -std::numeric_limits<float>::infinity();
    else
      ++kept;
  }
  return kept;
}

// The token an emit samples from its logits row (masked in place), and whether it ends
// the sequence (its JSON object closed or its choice complete, or no token was allowed).
int32_t CpuStepRunner::Choose(const Emit& e, float* row, std::vector<uint8_t>* allowed,
                              uint8_t* ends) const {
  const size_t vocab = static_cast<size_t>(model_->shape().vocab_size);
  const Params& p = e.params;
  const bool constrained = p.json || p.choice;
  const size_t kept = MaskRow(p, row, allowed);
  if (constrained && kept == 0) {  // nothing continues the constrained output: end here
    *ends = 1;
    return model_->shape().eos_id;
  }
  std::span<const float> l(row, vocab);
  const uint64_t seed = SplitMix(p.seed ^ SplitMix(static_cast<uint64_t>(e.position)));
  const int32_t token = p.temperature > 0 ? Sample(l, p.temperature, p.top_p, seed) : Argmax(l);
  if (EndsAnswer(p, token, e.position)) return model_->shape().eos_id;
  if (!constrained) return token;
  const bool in_vocab = token >= 0 && static_cast<size_t>(token) < token_bytes_.size();
  std::string_view bytes;  // (not `in_vocab ? string : ""`: that makes a temporary string)
  if (in_vocab) bytes = token_bytes_[static_cast<size_t>(token)];
  std::optional<JsonObjectConstraint> json = p.json;
  std::optional<ChoiceConstraint> choice = p.choice;
  if (!in_vocab || (json && !json->Feed(bytes)) || (choice && !choice->Feed(bytes))) {
    *ends = 1;  // only NaN logits pick a token the mask refused: end as if none were allowed
    return model_->shape().eos_id;
  }
  *ends = (json && json->complete()) || (choice && choice->complete()) ? 1 : 0;
  return token;
}

void CpuStepRunner::Compute(Job* job) const {
  std::vector<float> logits;
  if (!job->rows.empty()) job->status = model_->Forward(job->rows, &logits);
  if (!job->status.ok()) return;
  const size_t vocab = static_cast<size_t>(model_->shape().vocab_size);
  job->tokens.resize(job->emits.size());
  job->ends.assign(job->emits.size(), 0);
  std::vector<uint8_t> allowed;
  for (size_t k = 0; k < job->emits.size(); ++k)
    job->tokens[k] = Choose(job->emits[k], logits.data() + k * vocab, &allowed, &job->ends[k]);
}

void CpuStepRunner::Finish(std::vector<executors::StepItem>* items, Job& job) {
  const ModelShape& shape = model_->shape();
  for (size_t k = 0; k < job.emits.size(); ++k) {
    executors::StepItem& it = (*items)[job.emits[k].item];
    if (!job.status.ok()) continue;
    it.token = job.tokens[k];
    it.eos = (job.emits[k].params.stop_at_eos && shape.IsEos(it.token)) ||  // any of its ids
             job.ends[k] != 0;
  }
  if (!job.status.ok())
    for (executors::StepItem& it : *items)
      if (it.status.ok()) it.status = job.status;
  if (job.status.ok())
    for (const Job::Span& s : job.spans)
      if (Ctx* c = Find(s.context); c && c->cuts == s.cuts) {
        c->valid = std::max(c->valid, std::min(s.to, c->tokens));
        Index(s.context, *c);
      }
  busy_.clear();
  for (const Freed& f : deferred_) Return(f);
  deferred_.clear();
}

void CpuStepRunner::Work() {
  SetThreadName("sy-cpu-engine");
  for (;;) {
    std::function<void()> fn;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this]() { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      fn = std::move(queue_.front());
      queue_.pop_front();
    }
    fn();
  }
}

void CpuStepRunner::Stop() {
  alive_->store(false);
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

}  // namespace switchyard::cpu_engine
