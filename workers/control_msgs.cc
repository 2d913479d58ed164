// control_msgs.h: StepRunner calls <-> worker control messages.
#include "workers/control_msgs.h"

namespace switchyard::workers {

void ToAdmit(const executors::SequenceSpec& s, const std::string& primary, int64_t fresh_from,
             v1::SeqAdmit* m) {
  m->set_seq(s.key);
  m->set_primary(primary);
  m->set_fresh_from(fresh_from);
  for (const auto& c : s.contexts) {
    v1::ControlSeqContext* x = m->add_contexts();
    x->set_key(c.key);
    x->set_tokens(c.tokens);
    x->set_resident(c.resident);
  }
  m->set_extends_primary(s.extends_primary);
  m->set_prefill_tokens(s.prefill_tokens);
  m->set_output_done(s.output_done);
  m->set_max_output_tokens(s.max_output_tokens);
  for (int32_t t : s.prompt_token_ids) m->add_prompt_token_ids(t);
  m->set_temperature(s.temperature);
  m->set_top_p(s.top_p);
  m->set_sampling_seed(s.sampling_seed);
  m->set_stop_at_eos(s.stop_at_eos);
  m->set_token_mask(s.token_mask);
}

executors::SequenceSpec FromAdmit(const v1::SeqAdmit& m) {
  executors::SequenceSpec s;
  s.key = m.seq();
  for (const auto& c : m.contexts()) s.contexts.push_back({c.key(), c.tokens(), c.resident()});
  s.extends_primary = m.extends_primary();
  s.prefill_tokens = m.prefill_tokens();
  s.output_done = m.output_done();
  s.max_output_tokens = m.max_output_tokens();
  s.prompt_token_ids.assign(m.prompt_token_ids().begin(), m.prompt_token_ids().end());
  s.temperature = m.temperature();
  s.top_p = m.top_p();
  s.sampling_seed = m.sampling_seed();
  s.stop_at_eos = m.stop_at_eos();
  s.token_mask = m.token_mask();
  return s;
}

void ToRunStep(uint64_t step_id, const executors::StepShape& shape,
               const std::vector<executors::StepItem>& items, v1::RunStep* m) {
  m->set_step_id(step_id);
  m->set_prefill_tokens(shape.prefill_tokens);
  m->set_prefill_attention(shape.prefill_attention);
  m->set_decode_seqs(shape.decode_seqs);
  m->set_kv_tokens_read(shape.kv_tokens_read);
  for (const executors::StepItem& it : items) {
    v1::ControlStepItem* x = m->add_items();
    if (it.seq) x->set_seq(*it.seq);
    if (it.primary) x->set_primary(*it.primary);
    for (const executors::StepSpan& sp : it.spans) {
      v1::ControlStepSpan* y = x->add_spans();
      if (sp.context) y->set_context(*sp.context);
      y->set_from(sp.from);
      y->set_to(sp.to);
    }
    x->set_emits(it.emits);
    x->set_emit_position(it.emit_position);
  }
}

executors::StepShape ShapeOf(const v1::RunStep& m) {
  executors::StepShape s;
  s.prefill_tokens = m.prefill_tokens();
  s.prefill_attention = m.prefill_attention();
  s.decode_seqs = m.decode_seqs();
  s.kv_tokens_read = m.kv_tokens_read();
  return s;
}

std::vector<executors::StepItem> ItemsOf(const v1::RunStep& m, std::deque<std::string>* strings) {
  std::vector<executors::StepItem> items;
  for (const v1::ControlStepItem& x : m.items()) {
    executors::StepItem it;
    it.seq = &strings->emplace_back(x.seq());
    it.primary = &strings->emplace_back(x.primary());
    for (const v1::ControlStepSpan& y : x.spans())
      it.spans.push_back({&strings->emplace_back(y.context()), y.from(), y.to()});
    it.emits = x.emits();
    it.emit_position = x.emit_position();
    items.push_back(std::move(it));
  }
  return items;
}

void ToItemResult(const executors::StepItem& item, v1::ControlItemResult* m) {
  m->set_token(item.token);
  m->set_eos(item.eos);
  m->set_status_code(static_cast<int32_t>(item.status.code()));
  m->set_status_message(item.status.message());
}

void FromItemResult(const v1::ControlItemResult& m, executors::StepItem* item) {
  item->token = m.token();
  item->eos = m.eos();
  // A code this build does not know (a newer worker) reads as Internal.
  const int32_t code = m.status_code();
  const bool known = code > 0 && code <= static_cast<int32_t>(StatusCode::kUnauthenticated);
  item->status = code == 0
                     ? Status::OK()
                     : Status(known ? static_cast<StatusCode>(code) : StatusCode::kInternal,
                              "on the worker: " + m.status_message(), false, ErrorScope::kPeer);
}

}  // namespace switchyard::workers
