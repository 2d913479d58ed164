// Engine calibration: the step times of a real CpuEngine (cpu_engine/cpu_engine.h) over
// a grid of batch shapes, written as the step table TableStepCost reads
// (executors/step_cost.h, configs/step_tables/README.md), so that `switchyard replay` on a
// cluster with that `stepTable` times its simulated steps as this machine's CPU engine runs
// them (`switchyard calibrate --engine cpu`).
//
// How a point is measured. For a grid point (P prefill tokens, D decode sequences, K KV
// tokens of the decoders, C cached tokens of the prefilling sequence) a fresh CpuEngine
// step is set up on an AsioEventLoop (real time, the engine's own compute thread, as in
// `switchyard serve --engine cpu`):
//   * D decoding sequences, each on a context of K / D tokens (the remainder spread over
//     the first ones; at least 1 token each) whose KV is imported into the pool (Import,
//     filled with a fixed small pattern, CommitImport: nothing is prefilled), admitted with
//     no prefill and an output cap of 1: each decodes one token in the step;
//   * with P > 0 one prefill sequence of P new tokens on an imported context of C cached
//     tokens (none for C = 0), output cap 1: its whole prefill is the step's one chunk —
//     a short extend on a long context is what an agent's next call runs, and its
//     attention (P x C query-key pairs) is what a table without C cannot price.
// K only matters with decoders and C only with a prefill: points with D = 0 take K = 0
// only, points with P = 0 take C = 0 only (each shape is measured once).
// All are admitted at one instant, so they share one step; the StepReport's end − start is
// the sample (the loop's clock around the real computation: the thread hand-off included,
// which is what a served step costs). Each point runs one warm-up step and then
// `repetitions` steps; its time is the median. The row written is the shape the report
// says (prefill_tokens, decode_seqs, kv_tokens_read = the decoders' contexts + C), not
// the nominal one, and prefill_attention = P * (C + (P + 1) / 2). Points the model
// cannot run (a context longer than its max_positions) or with no token (P = D = 0) are
// skipped and listed. Every context is Released between steps.
//
// The model is whatever Model::Load gives: a shape file (random weights — the timing is
// the model's, its text is meaningless) or a checkpoint.
//
// Thread-safety: CalibrateCpuEngine blocks the calling thread (it runs its own loop) and
// may run concurrently with other calibrations on other models; the other functions are
// pure.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/result.h"
#include "cpu_engine/model.h"

namespace switchyard::cpu_engine {

struct CalibrationGrid {
  std::vector<int64_t> prefill_tokens = {0, 16, 64, 256};
  std::vector<int64_t> decode_seqs = {0, 1, 4, 16};
  std::vector<int64_t> kv_tokens = {0, 512, 2048, 8192};  // the decoders' contexts, all together
  std::vector<int64_t> prefill_cached = {0, 512, 2048};   // the prefilling sequence's context
  int repetitions = 5;  // measured steps per point (after one warm-up step)
};

struct CalibrationPoint {
  int64_t prefill_tokens = 0;  // as the step report says
  int64_t decode_seqs = 0;
  int64_t kv_tokens = 0;
  int64_t prefill_cached = 0;    // C of the point (0 without a prefill)
  double prefill_attention = 0;  // PrefillAttention(prefill_tokens, prefill_cached)
  double step_time_s = 0;        // median of samples_s
  std::vector<double> samples_s;
};

struct Calibration {
  std::vector<CalibrationPoint> points;
  std::vector<std::string> skipped;  // "P=0 D=0 K=512: no token to compute", ...
  int64_t block_tokens = 16;
  double wall_s = 0;  // the whole run
};

struct CalibrationOptions {
  CalibrationGrid grid;
  int64_t block_tokens = 16;  // the engine's KV block size (as serve's kvBlockTokens)
  // Called after each point (progress), on the calling thread.
  std::function<void(const CalibrationPoint&)> on_point;
};

// InvalidArgument naming the field for an empty grid axis, a negative value, repetitions
// < 1 or block_tokens < 1; the engine's error (naming the point) when a step fails.
Result<Calibration> CalibrateCpuEngine(const Model& model, const CalibrationOptions& options);

// StepShape::prefill_attention of one chunk of n tokens on c cached: n * (c + (n + 1) / 2).
double PrefillAttention(int64_t n, int64_t c);

// The step table (header line
// `prefill_tokens,decode_seqs,kv_tokens,prefill_attention,step_time_s`, one row per point),
// after `comment_lines`, each written as "# <line>".
std::string StepTableCsv(const Calibration& calibration,
                         const std::vector<std::string>& comment_lines);

// The comment lines `switchyard calibrate --engine cpu` writes: engine, model (its
// Describe(), which says "random weights" for a shape file), block size, grid and
// repetitions, this machine (CalibrationMachine) and the date.
std::vector<std::string> CalibrationHeader(const Model& model, const std::string& model_path,
                                           const CalibrationOptions& options,
                                           const Calibration& calibration);

// "Intel(R) Xeon(R) ... (2 CPUs online, host NAME)" from /proc/cpuinfo and the host name.
std::string CalibrationMachine();

}  // namespace switchyard::cpu_engine
