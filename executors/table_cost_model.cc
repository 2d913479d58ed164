#include "executors/table_cost_model.h"

#include <algorithm>

namespace switchyard::executors {

Duration StepTableCostModel::PrefillTime(int64_t n, int64_t c) const {
  if (n <= 0) return Duration(0);
  StepShape s;
  s.prefill_tokens = n;
  s.kv_tokens_read = std::max<int64_t>(0, c);
  s.prefill_attention = static_cast<double>(n) *
                        (static_cast<double>(s.kv_tokens_read) + static_cast<double>(n + 1) / 2);
  return steps_->StepTime(s);
}

Duration StepTableCostModel::DecodeTime(int64_t steps, int64_t c) const {
  if (steps <= 0) return Duration(0);
  StepShape s;
  s.decode_seqs = 1;
  s.kv_tokens_read = std::max<int64_t>(0, c) + (steps - 1) / 2;
  return steps_->StepTime(s) * steps;
}

Duration StepTableCostModel::BatchStepTime(int64_t seqs, int64_t kv_tokens) const {
  StepShape s;
  s.decode_seqs = static_cast<int>(std::max<int64_t>(1, seqs));
  s.kv_tokens_read = std::max<int64_t>(0, kv_tokens);
  return steps_->StepTime(s);
}

}  // namespace switchyard::executors
