// control_msgs.h: StepRunner calls and direct put orders <-> worker control messages.
#include "workers/control_msgs.h"

#include <chrono>

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
  m->set_json_schema(s.json_schema);
  for (const auto& [token, bias] : s.logit_bias) {
    m->add_logit_bias_tokens(token);
    m->add_logit_bias_values(bias);
  }
  for (const std::string& c : s.choices) m->add_choices(c);
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
  s.json_schema = m.json_schema();
  for (int i = 0; i < m.logit_bias_tokens_size() && i < m.logit_bias_values_size(); ++i)
    s.logit_bias.emplace_back(m.logit_bias_tokens(i), m.logit_bias_values(i));
  s.choices.assign(m.choices().begin(), m.choices().end());
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
  item->status = StatusFromWire(m.status_code(), m.status_message(), ErrorScope::kRemote);
}

Status StatusFromWire(int32_t code, const std::string& message, ErrorScope scope) {
  const bool known = code > 0 && code <= static_cast<int32_t>(StatusCode::kUnauthenticated);
  return code == 0 ? Status::OK()
                   : Status(known ? static_cast<StatusCode>(code) : StatusCode::kInternal,
                            "on the worker: " + message, false, scope);
}

namespace kv_store = kv_store;

void ToStoreRef(const kv_store::StoreRef& s, v1::KvStoreRef* m) {
  m->set_address(s.address);
  m->set_transport(s.transport);
  for (const auto& [k, v] : s.transport_config.params) (*m->mutable_transport_params())[k] = v;
  m->set_communicator_epoch(s.communicator_epoch);
  m->set_model_epoch(s.model_epoch);
  m->set_workflow_id(s.workflow_id);
  m->set_context_id(s.context_id);
}

kv_store::StoreRef FromStoreRef(const v1::KvStoreRef& m) {
  kv_store::StoreRef s;
  s.address = m.address();
  if (!m.transport().empty()) s.transport = m.transport();
  for (const auto& [k, v] : m.transport_params()) s.transport_config.params[k] = v;
  s.communicator_epoch = m.communicator_epoch();
  s.model_epoch = m.model_epoch();
  s.workflow_id = m.workflow_id();
  s.context_id = m.context_id();
  return s;
}

void ToPutBlocks(const kv_store::DirectPutOrder& o, v1::PutBlocks* m) {
  m->set_order_id(o.order_id);
  m->set_transfer_id(o.transfer_id);
  ToStoreRef(o.source, m->mutable_source());
  ToStoreRef(o.destination, m->mutable_destination());
  m->set_generation(o.generation);
  m->set_traffic_class(o.traffic_class);
  m->set_flow_key(o.flow_key);
  m->set_timeout_ms(static_cast<uint32_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(o.timeout).count()));
  for (const kv_store::DirectBlock& b : o.blocks) {
    v1::PutBlock* x = m->add_blocks();
    x->set_source_block_id(b.source_block_id);
    x->set_source_generation(b.source_generation);
    x->set_block_id(b.block_id);
    x->set_bytes(b.bytes);
    if (b.checksum) x->set_checksum(*b.checksum);
    *x->mutable_meta() = b.meta;
  }
}

Result<kv_store::DirectPutOrder> FromPutBlocks(const v1::PutBlocks& m) {
  const std::string what = "put_blocks order " + std::to_string(m.order_id());
  if (m.blocks().empty()) return Status::InvalidArgument(what + ": no blocks");
  if (m.destination().address().empty())
    return Status::InvalidArgument(what + ": destination.address is empty");
  if (!v1::TrafficClass_IsValid(m.traffic_class()) ||
      m.traffic_class() == v1::TRAFFIC_CLASS_UNSPECIFIED)
    return Status::InvalidArgument(what + ": traffic_class " +
                                   std::to_string(static_cast<int>(m.traffic_class())) +
                                   " is not a traffic class");
  kv_store::DirectPutOrder o;
  o.order_id = m.order_id();
  o.transfer_id = m.transfer_id();
  o.source = FromStoreRef(m.source());
  o.destination = FromStoreRef(m.destination());
  o.generation = m.generation();
  o.traffic_class = m.traffic_class();
  o.flow_key = m.flow_key();
  o.timeout = Millis(m.timeout_ms());
  for (const v1::PutBlock& x : m.blocks()) {
    if (x.bytes() == 0)
      return Status::InvalidArgument(what + ": block " + std::to_string(x.block_id()) +
                                     " has bytes 0");
    kv_store::DirectBlock b;
    b.source_block_id = x.source_block_id();
    b.source_generation = x.source_generation();
    b.block_id = x.block_id();
    b.bytes = x.bytes();
    if (x.has_checksum()) b.checksum = x.checksum();
    b.meta = x.meta();
    o.blocks.push_back(std::move(b));
  }
  return o;
}

void ToPutBlocksDone(const kv_store::DirectPutOutcome& o, v1::PutBlocksDone* m) {
  m->set_order_id(o.order_id);
  m->set_status_code(static_cast<int32_t>(o.status.code()));
  m->set_status_message(o.status.message());
  m->set_posted(o.events.posted);
  m->set_transport_complete(o.events.receiver_transport_complete);
  m->set_validated(o.events.validated);
  m->set_committed(o.events.committed);
  m->set_rejected(o.events.rejected);
  if (o.events.rejected)
    m->set_reject_reason(std::string(kv_store::RejectReasonName(o.events.reason)));
  m->set_unreachable(o.unreachable);
  for (const kv_store::BlockRef& b : o.blocks) {
    v1::PutBlockResult* r = m->add_blocks();
    r->set_block_id(b.block_id);
    r->set_checksum(b.checksum);
  }
  m->set_bytes(o.bytes);
  m->set_credit_retries(o.credit_retries);
  m->set_worker_time_ns(o.took.count());
}

kv_store::DirectPutOutcome FromPutBlocksDone(const v1::PutBlocksDone& m) {
  kv_store::DirectPutOutcome o;
  o.order_id = m.order_id();
  o.status = StatusFromWire(m.status_code(), m.status_message(), ErrorScope::kTransfer);
  o.events.posted = m.posted();
  o.events.receiver_transport_complete = m.transport_complete();
  o.events.validated = m.validated();
  o.events.committed = m.committed();
  o.events.rejected = m.rejected();
  o.events.message = m.reject_reason();
  o.unreachable = m.unreachable();
  for (const v1::PutBlockResult& r : m.blocks())
    o.blocks.push_back({r.block_id(), 0, r.checksum()});
  o.bytes = m.bytes();
  o.credit_retries = m.credit_retries();
  o.took = Duration(m.worker_time_ns());
  return o;
}

}  // namespace switchyard::workers
