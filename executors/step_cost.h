// StepCostModel: the time of one continuous-batching engine step (executors/engine.h).
//
// A step runs one forward pass over a batch: prefill chunks of some sequences and one
// decode token of others. StepShape is what a model needs to price it; the simulated
// engine (executors/simulated_engine.h) builds one per step. Two models:
//
//   RooflineStepCost  analytic, from a model config and a GPU spec (configs/models,
//                     configs/gpus), the batched form of executors/model_cost.h:
//     tokens   = prefill_tokens + decode_seqs          (every token the step processes)
//     pairs    = prefill_attention + kv_tokens_read + decode_seqs
//     FLOPs    = 2 * params * tokens                   (one multiply-add per weight per token)
//              + 4 * layers * heads * head_dim * pairs (QK^T and AV per query x key pair)
//     bytes    = 2 * params                            (bf16 weights, read once per step)
//              + kv_bytes_per_token * (kv_tokens_read + tokens)   (KV read, KV written)
//     time     = max(FLOPs / (bf16_flops * compute_efficiency * TP),
//                    bytes / (hbm_bandwidth * memory_efficiency * TP)) + step_overhead
//     `pairs` counts every KV token read as one query x key pair: exact for a decoding
//     sequence (its one query over its context; `+ decode_seqs` for the new token over
//     itself); a prefill chunk's cached tokens are already inside prefill_attention
//     (n * c), so counting them again adds c pairs, a relative over-count of 1/n (below
//     0.1% for chunks of 1000 tokens or more; decode-heavy steps are memory-bound anyway).
//     TP splits FLOPs and bytes over tensor_parallel GPUs; collective communication is not
//     priced. step_overhead is the per-step CPU cost (scheduling, input preparation, kernel
//     launches, sampling) that a GPU-bound roofline misses; kDefaultStepOverhead = 1 ms is
//     the order of magnitude of vLLM V1's per-step host overhead with CUDA graphs.
//     An empty shape (no token) costs zero.
//
//   TableStepCost     measured: a CSV of step times (configs/step_tables/README.md), fitted
//                     by non-negative least squares to one or two planes
//     t = a + b * prefill_tokens + c * decode_seqs + d * kv_tokens_read
//           + e * prefill_attention,                      a, b, c, d, e >= 0
//     each fitted exactly (the best feasible unconstrained fit over the 31 supports of the
//     five coefficients is the NNLS optimum). The prefill_attention column is optional: a
//     four-column table (no such column) fits a..d with e = 0, as before. A GPU step is a roofline,
//     the max of a compute-bound and a memory-bound plane, which one plane fits poorly (up to ~45%
//     off on the roofline-derived example table; two planes: 8%). So the fit also tries the max of
//     two planes by least-squares partition (rows split by which plane is higher, each side
//     refitted, until the split is stable, at most 32 rounds) from four first splits (rows above
//     the single plane; rows above the median of each input), and keeps the best if it cuts the
//     squared error by 10% or more. Deterministic. StepTime = the max over the planes, at least the
//     smallest measured time: monotone in every input; noisy rows average out. With the fifth
//     column the fit prices a short chunk on a long cached context (attention work n * (c + (n + 1)
//     / 2)) apart from its token count; a four-column table cannot (it sees the cached tokens once,
//     in kv_tokens) and underprices such chunks several times on an attention-bound engine.
//
// Thread-safety: immutable values after construction; StepTime may be called from any
// thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "base/time.h"
#include "proto/switchyard/v1/model.pb.h"

namespace switchyard::executors {

// What one engine step computes.
struct StepShape {
  int64_t prefill_tokens = 0;    // prefill tokens computed in the step (all chunks)
  double prefill_attention = 0;  // sum over chunks of n * (c + (n + 1) / 2): n chunk tokens
                                 // on c cached (causal attention work, token^2 units)
  int decode_seqs = 0;           // sequences decoding one token
  int64_t kv_tokens_read = 0;    // KV tokens attention reads (every sequence's context
                                 // before the step)
};

class StepCostModel {
 public:
  virtual ~StepCostModel() = default;
  virtual std::string_view name() const = 0;
  virtual Duration StepTime(const StepShape& shape) const = 0;
};

// Per-step host overhead the roofline adds by default (see the header comment).
inline constexpr Duration kDefaultStepOverhead = Millis(1);

class RooflineStepCost final : public StepCostModel {
 public:
  // InvalidArgument naming the field when a dimension, rate or efficiency is missing, or
  // when step_overhead is negative.
  static Result<RooflineStepCost> Create(const v1::ModelConfig& model, const v1::GpuSpec& gpu,
                                         Duration step_overhead = kDefaultStepOverhead);
  static Result<RooflineStepCost> FromFiles(const std::string& model_json,
                                            const std::string& gpu_json,
                                            Duration step_overhead = kDefaultStepOverhead);

  std::string_view name() const override { return "roofline step cost"; }
  Duration StepTime(const StepShape& shape) const override;

  double Flops(const StepShape& shape) const;  // per replica (all TP GPUs together)
  double Bytes(const StepShape& shape) const;
  uint64_t kv_bytes_per_token() const { return kv_bytes_per_token_; }
  Duration step_overhead() const { return overhead_; }

 private:
  RooflineStepCost() = default;
  double params_ = 0;
  double attention_flops_per_pair_ = 0;  // 4 * layers * heads * head_dim
  uint64_t kv_bytes_per_token_ = 0;
  double flops_rate_ = 0;  // bf16_flops * compute_efficiency * TP
  double bytes_rate_ = 0;  // hbm_bandwidth * memory_efficiency * TP
  Duration overhead_{0};
};

class TableStepCost final : public StepCostModel {
 public:
  // One fitted plane, coefficients in seconds (see the header comment).
  struct Plane {
    double intercept_s = 0;
    double per_prefill_token_s = 0;
    double per_decode_seq_s = 0;
    double per_kv_token_s = 0;
    double per_prefill_attention_s = 0;  // per StepShape::prefill_attention unit (0: 4 columns)
    double Seconds(const StepShape& shape) const;
  };

  // NotFound / Unavailable naming the path when the file cannot be read; else as FromText.
  static Result<TableStepCost> FromFile(const std::string& path);
  // InvalidArgument naming `source_name`, the line and the column for a bad row; for a
  // missing header (four or five columns); for fewer rows than coefficients (4 or 5) or
  // rows that do not vary prefill_tokens, decode_seqs, kv_tokens (and prefill_attention)
  // independently (the fit would be undetermined).
  static Result<TableStepCost> FromText(std::string_view text, const std::string& source_name);

  std::string_view name() const override { return "table step cost"; }
  Duration StepTime(const StepShape& shape) const override;

  const std::vector<Plane>& planes() const { return planes_; }  // one or two
  size_t rows() const { return rows_; }
  double min_step_time_s() const { return min_time_s_; }
  const std::string& source() const { return source_; }
  bool has_prefill_attention() const { return attention_column_; }  // a five-column table

 private:
  TableStepCost() = default;
  bool attention_column_ = false;
  std::vector<Plane> planes_;
  size_t rows_ = 0;
  double min_time_s_ = 0;
  std::string source_;
};

}  // namespace switchyard::executors
