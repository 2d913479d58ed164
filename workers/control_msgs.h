// Conversions between the worker control messages (proto/switchyard/v1/worker_control.proto)
// and what they carry, both directions: the executors' StepRunner calls, and the direct
// put orders and outcomes of transport/direct_order.h.
//
// Thread-safety: pure functions on values.
#pragma once

#include <deque>
#include <string>
#include <vector>

#include "base/result.h"
#include "base/status.h"
#include "executors/step_runner.h"
#include "kv_store/direct_order.h"
#include "proto/switchyard/v1/worker_control.pb.h"

namespace switchyard::workers {

void ToAdmit(const executors::SequenceSpec& spec, const std::string& primary, int64_t fresh_from,
             v1::SeqAdmit* out);
executors::SequenceSpec FromAdmit(const v1::SeqAdmit& m);

void ToRunStep(uint64_t step_id, const executors::StepShape& shape,
               const std::vector<executors::StepItem>& items, v1::RunStep* out);
// The step's shape, and its items with their strings kept in `strings` (StepItem points
// into it; it must outlive the items).
executors::StepShape ShapeOf(const v1::RunStep& m);
std::vector<executors::StepItem> ItemsOf(const v1::RunStep& m, std::deque<std::string>* strings);

void ToItemResult(const executors::StepItem& item, v1::ControlItemResult* out);
void FromItemResult(const v1::ControlItemResult& m, executors::StepItem* item);

// A status that crossed the connection (a base::StatusCode and its message), said to come
// from the worker, with `scope`; a code this build does not know (a newer peer) reads as
// Internal.
Status StatusFromWire(int32_t code, const std::string& message, ErrorScope scope);

void ToStoreRef(const kv_store::StoreRef& s, v1::KvStoreRef* out);
kv_store::StoreRef FromStoreRef(const v1::KvStoreRef& m);

void ToPutBlocks(const kv_store::DirectPutOrder& order, v1::PutBlocks* out);
// InvalidArgument naming the field when the order cannot be carried out as sent (no
// blocks, no destination address, an unknown traffic class).
Result<kv_store::DirectPutOrder> FromPutBlocks(const v1::PutBlocks& m);
void ToPutBlocksDone(const kv_store::DirectPutOutcome& outcome, v1::PutBlocksDone* out);
kv_store::DirectPutOutcome FromPutBlocksDone(const v1::PutBlocksDone& m);

}  // namespace switchyard::workers
