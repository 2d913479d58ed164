// BatchingEngine's steps (batching_engine.h): forming each step's batch, the positions a
// computing runner fills, and applying the step's progress when it ends.
#include <algorithm>

#include "executors/batching_engine.h"

namespace switchyard::executors {

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
  if (limits_.max_chunk_tokens > 0) n = std::min(n, limits_.max_chunk_tokens);
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
  p.cached_tokens = s.cached + s.hit;
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
  report_.prefix_query_tokens = pending_queries_;  // Admit may add more during the listener
  report_.prefix_hit_tokens = pending_hits_;
  pending_queries_ = pending_hits_ = 0;
  if (listener_) listener_(report_);
}

}  // namespace switchyard::executors
