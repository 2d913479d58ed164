// Conversions between the executors' StepRunner calls and the worker control messages
// (proto/switchyard/v1/worker_control.proto), both directions.
#pragma once

#include <deque>
#include <string>
#include <vector>

#include "base/status.h"
#include "executors/step_runner.h"
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

}  // namespace switchyard::workers
