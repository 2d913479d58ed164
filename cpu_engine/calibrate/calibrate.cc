#include "cpu_engine/calibrate/calibrate.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <memory>
#include <thread>

#include "base/asio_event_loop.h"
#include "cpu_engine/cpu_engine.h"

namespace switchyard::cpu_engine {
namespace {

// A nominal grid point.
struct Want {
  int64_t p = 0, d = 0, k = 0, c = 0;  // c: the prefilling sequence's cached tokens
  std::string Name() const {
    return "P=" + std::to_string(p) + " D=" + std::to_string(d) + " K=" + std::to_string(k) +
           " C=" + std::to_string(c);
  }
};

constexpr Duration kStepTimeout = std::chrono::seconds(120);

Status CheckAxis(const std::vector<int64_t>& axis, const char* name) {
  if (axis.empty())
    return Status::InvalidArgument(std::string("calibration grid: ") + name + " is empty");
  for (int64_t v : axis)
    if (v < 0)
      return Status::InvalidArgument(std::string("calibration grid: ") + name + " has " +
                                     std::to_string(v) + " (must be >= 0)");
  return Status::OK();
}

Status CheckOptions(const CalibrationOptions& o) {
  SY_RETURN_IF_ERROR(CheckAxis(o.grid.prefill_tokens, "prefill_tokens"));
  SY_RETURN_IF_ERROR(CheckAxis(o.grid.decode_seqs, "decode_seqs"));
  SY_RETURN_IF_ERROR(CheckAxis(o.grid.kv_tokens, "kv_tokens"));
  SY_RETURN_IF_ERROR(CheckAxis(o.grid.prefill_cached, "prefill_cached"));
  if (o.grid.repetitions < 1)
    return Status::InvalidArgument("calibration grid: repetitions must be >= 1, not " +
                                   std::to_string(o.grid.repetitions));
  if (o.block_tokens < 1)
    return Status::InvalidArgument("calibration: block_tokens must be >= 1, not " +
                                   std::to_string(o.block_tokens));
  return Status::OK();
}

// Tokens of KV held by decoder i of a point (K spread over D, at least 1 each).
int64_t DecoderTokens(const Want& w, int64_t i) {
  int64_t base = w.k / w.d, extra = w.k % w.d;
  return std::max<int64_t>(1, base + (i < extra ? 1 : 0));
}

// Empty when the model can run the point, else why not.
std::string Infeasible(const Want& w, int64_t max_positions) {
  if (w.p == 0 && w.d == 0) return w.Name() + ": no token to compute";
  if (w.d > 0 && DecoderTokens(w, 0) + 1 > max_positions)
    return w.Name() + ": a decoder's context of " + std::to_string(DecoderTokens(w, 0)) +
           " tokens passes the model's max_positions " + std::to_string(max_positions);
  if (w.p > 0 && w.c + w.p + 1 > max_positions)
    return w.Name() + ": a prefill of " + std::to_string(w.p) + " on " + std::to_string(w.c) +
           " cached tokens passes the model's max_positions " + std::to_string(max_positions);
  return "";
}

// Blocks a point holds at most (contexts, prefill and the output slots).
int64_t PointBlocks(const Want& w, int64_t bt) {
  int64_t n = 0;
  for (int64_t i = 0; i < w.d; ++i) n += executors::BlocksFor(DecoderTokens(w, i) + 1, bt);
  if (w.p > 0) n += executors::BlocksFor(w.c + w.p + 1, bt);
  return n;
}

}  // namespace

double PrefillAttention(int64_t n, int64_t c) {
  return static_cast<double>(n) * (static_cast<double>(c) + (static_cast<double>(n) + 1.0) / 2.0);
}

namespace {

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Runs the points on one CpuEngine, one step each repetition.
class Driver {
 public:
  Driver(const CalibrationOptions& o, std::vector<Want> points)
      : options_(o), points_(std::move(points)) {}

  Status Init(const Model& model, int64_t pool_blocks, int64_t max_batch, int64_t max_seqs) {
    executors::EngineLimits limits;
    limits.block_tokens = options_.block_tokens;
    limits.pool_blocks = pool_blocks;
    limits.max_num_batched_tokens = std::max<int64_t>(8192, max_batch);
    limits.max_num_seqs = static_cast<int>(std::max<int64_t>(256, max_seqs));
    CpuEngine::Options eo;
    eo.model = &model;
    eo.tokens = &log_;
    eo.tenant = "calibrate";
    SY_ASSIGN_OR_RETURN(engine_, CpuEngine::Create(&loop_, 0, limits, eo));
    engine_->SetListener([this](const executors::StepReport& r) { OnReport(r); });
    block_floats_ = KvBlockFloats(model.shape(), options_.block_tokens);
    return Status::OK();
  }

  Result<std::vector<CalibrationPoint>> Run() {
    loop_.Post([this]() { Next(); });
    loop_.Run();
    if (!error_.ok()) return error_;
    return std::move(done_);
  }

 private:
  void Fail(Status s) {
    if (error_.ok()) error_ = std::move(s);
    loop_.Stop();
  }

  // After a step (or at the start): releases the last step's contexts, records, sets up
  // the next step or stops.
  void Next() {
    Cleanup();
    if (index_ >= points_.size()) {
      loop_.Stop();
      return;
    }
    ++round_;
    Status st = StartStep(points_[index_]);
    if (!st.ok()) Fail(st.Annotate("calibration point " + points_[index_].Name()));
  }

  Status ImportContext(const std::string& key, int64_t tokens) {
    SY_RETURN_IF_ERROR(engine_->Import(key, tokens));
    contexts_.push_back(key);
    SY_ASSIGN_OR_RETURN(std::vector<void*> blocks, engine_->ImportTargets(key));
    for (void* b : blocks) {  // a fixed small pattern: no denormals, no NaN
      float* f = static_cast<float*>(b);
      for (uint64_t i = 0; i < block_floats_; ++i)
        f[i] = 0.01f * static_cast<float>(i % 17) - 0.08f;
    }
    return engine_->CommitImport(key, tokens);
  }

  Status StartStep(const Want& w) {
    const std::string prefix = "calibrate/" + std::to_string(round_) + "/";
    std::vector<executors::SequenceSpec> specs;
    for (int64_t i = 0; i < w.d; ++i) {
      executors::SequenceSpec s;
      s.key = prefix + "decode-" + std::to_string(i);
      std::string ctx = prefix + "ctx-" + std::to_string(i);
      int64_t tokens = DecoderTokens(w, i);
      SY_RETURN_IF_ERROR(ImportContext(ctx, tokens));
      s.contexts.push_back(executors::SeqContext{ctx, tokens, true});
      specs.push_back(std::move(s));
    }
    if (w.p > 0) {
      executors::SequenceSpec s;
      s.key = prefix + "prefill";
      if (w.c > 0) {
        std::string ctx = prefix + "ctx-prefill";
        SY_RETURN_IF_ERROR(ImportContext(ctx, w.c));
        s.contexts.push_back(executors::SeqContext{ctx, w.c, true});
      }
      s.prefill_tokens = w.p;
      specs.push_back(std::move(s));
    }
    for (executors::SequenceSpec& s : specs) {
      s.max_output_tokens = 1;
      s.stop_at_eos = false;
      seqs_.push_back(s.key);
      SY_RETURN_IF_ERROR(engine_->Admit(s));
    }
    watchdog_ = loop_.PostAt(loop_.Now() + kStepTimeout, [this]() {
      Fail(Status::DeadlineExceeded("calibration point " + points_[index_].Name() +
                                    ": no step report within 120 s"));
    });
    return Status::OK();
  }

  void OnReport(const executors::StepReport& r) {
    if (r.seqs.empty()) {
      if (!r.exhausted.empty())
        Fail(Status::ResourceExhausted("calibration point " + points_[index_].Name() +
                                       ": the KV pool ran out (" + r.exhausted.front() + ")"));
      return;
    }
    for (const executors::SeqProgress& s : r.seqs)
      if (!s.status.ok())
        return Fail(s.status.Annotate("calibration point " + points_[index_].Name()));
    if (engine_->running() > 0) return;  // a second step for this point: not expected
    loop_.Cancel(watchdog_);
    Record(r);
    loop_.Post([this]() { Next(); });
  }

  void Record(const executors::StepReport& r) {
    const Want& w = points_[index_];
    if (r.prefill_tokens != w.p || r.decode_seqs != w.d) {
      return Fail(Status::Internal("calibration point " + w.Name() +
                                   ": the step ran P=" + std::to_string(r.prefill_tokens) +
                                   " D=" + std::to_string(r.decode_seqs)));
    }
    if (rep_++ == 0) return;  // the warm-up step
    current_.prefill_tokens = r.prefill_tokens;
    current_.decode_seqs = r.decode_seqs;
    current_.kv_tokens = r.kv_tokens_read;
    current_.prefill_cached = w.p > 0 ? w.c : 0;
    current_.prefill_attention = PrefillAttention(r.prefill_tokens, current_.prefill_cached);
    current_.samples_s.push_back(ToSeconds(r.end - r.start));
    if (static_cast<int>(current_.samples_s.size()) < options_.grid.repetitions) return;
    current_.step_time_s = Median(current_.samples_s);
    if (options_.on_point) options_.on_point(current_);
    done_.push_back(std::move(current_));
    current_ = CalibrationPoint{};
    rep_ = 0;
    ++index_;
  }

  void Cleanup() {
    for (const std::string& c : contexts_) (void)engine_->Release(c);
    for (const std::string& c : contexts_) log_.Forget(c);
    for (const std::string& s : seqs_) log_.Forget(s);
    contexts_.clear();
    seqs_.clear();
  }

  const CalibrationOptions& options_;
  std::vector<Want> points_;
  AsioEventLoop loop_;
  TokenLog log_;
  std::unique_ptr<CpuEngine> engine_;
  uint64_t block_floats_ = 0;
  size_t index_ = 0;
  int rep_ = 0;
  int64_t round_ = 0;
  TimerId watchdog_{};
  CalibrationPoint current_;
  std::vector<CalibrationPoint> done_;
  std::vector<std::string> contexts_, seqs_;
  Status error_;
};

std::string Join(const std::vector<int64_t>& v) {
  std::string s;
  for (int64_t x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return "{" + s + "}";
}

}  // namespace

Result<Calibration> CalibrateCpuEngine(const Model& model, const CalibrationOptions& o) {
  SY_RETURN_IF_ERROR(CheckOptions(o));
  auto t0 = std::chrono::steady_clock::now();
  Calibration cal;
  cal.block_tokens = o.block_tokens;
  std::vector<Want> points;
  int64_t pool_blocks = 1, max_batch = 1, max_seqs = 1;
  // K applies to decoders and C to a prefill only: with D = 0 one K (0), with P = 0 one C
  // (0), so no shape is measured twice.
  const std::vector<int64_t> zero = {0};
  for (int64_t p : o.grid.prefill_tokens)
    for (int64_t d : o.grid.decode_seqs)
      for (int64_t k : d == 0 ? zero : o.grid.kv_tokens)
        for (int64_t c : p == 0 ? zero : o.grid.prefill_cached) {
          Want w{p, d, k, c};
          std::string why = Infeasible(w, model.shape().max_positions);
          if (!why.empty()) {
            cal.skipped.push_back(why);
            continue;
          }
          points.push_back(w);
          pool_blocks = std::max(pool_blocks, PointBlocks(w, o.block_tokens) + 4);
          max_batch = std::max(max_batch, p + d);
          max_seqs = std::max(max_seqs, d + 1);
        }
  if (points.empty())
    return Status::InvalidArgument("calibration grid: no point the model can run (" +
                                   std::to_string(cal.skipped.size()) + " skipped)");
  Driver driver(o, std::move(points));
  SY_RETURN_IF_ERROR(driver.Init(model, pool_blocks, max_batch, max_seqs));
  SY_ASSIGN_OR_RETURN(cal.points, driver.Run());
  cal.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return cal;
}

std::string StepTableCsv(const Calibration& c, const std::vector<std::string>& comment_lines) {
  std::string out;
  for (const std::string& l : comment_lines) out += "# " + l + "\n";
  out += "prefill_tokens,decode_seqs,kv_tokens,prefill_attention,step_time_s\n";
  char buf[160];
  for (const CalibrationPoint& p : c.points) {
    std::snprintf(buf, sizeof(buf), "%lld,%lld,%lld,%.17g,%.6g\n",
                  static_cast<long long>(p.prefill_tokens), static_cast<long long>(p.decode_seqs),
                  static_cast<long long>(p.kv_tokens), p.prefill_attention, p.step_time_s);
    out += buf;
  }
  return out;
}

std::string CalibrationMachine() {
  std::string cpu = "unknown CPU";
  std::ifstream f("/proc/cpuinfo");
  for (std::string line; std::getline(f, line);) {
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos) {
      cpu = line.substr(line.find(':') + 2);
      break;
    }
  }
  char host[256] = {0};
  if (gethostname(host, sizeof(host) - 1) != 0) host[0] = '\0';
  double load[1] = {0};
  std::string la = getloadavg(load, 1) == 1 ? std::to_string(load[0]).substr(0, 4) : "?";
  return cpu + " (" + std::to_string(sysconf(_SC_NPROCESSORS_ONLN)) + " CPUs online, host " +
         (host[0] ? host : "?") + ", load average " + la + " at the end)";
}

std::vector<std::string> CalibrationHeader(const Model& model, const std::string& model_path,
                                           const CalibrationOptions& o, const Calibration& c) {
  char date[64];
  std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof(date), "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  std::vector<std::string> h = {
      "Step times of the reference CPU engine (CpuEngine, cpu_engine/cpu_engine.h), "
      "MEASURED by `switchyard calibrate --engine cpu` on " +
          std::string(date) + ".",
      "Model: " + model_path + ": " + model.shape().Describe() + ".",
  };
  if (model.shape().random_weights)
    h.push_back(
        "The model has RANDOM WEIGHTS: the times are its shape's; its text is meaningless.");
  h.push_back("Machine: " + CalibrationMachine() + ".");
  h.push_back(
      "Each row: one engine step on an AsioEventLoop (StepReport end - start, the compute "
      "thread's hand-off included), the median of " +
      std::to_string(o.grid.repetitions) + " steps after one warm-up; block_tokens " +
      std::to_string(c.block_tokens) + ".");
  h.push_back("Grid: prefill_tokens " + Join(o.grid.prefill_tokens) + " x decode_seqs " +
              Join(o.grid.decode_seqs) + " x decoders' kv_tokens " + Join(o.grid.kv_tokens) +
              " x the prefill's cached tokens " + Join(o.grid.prefill_cached) + "; " +
              std::to_string(c.points.size()) + " rows, " + std::to_string(c.skipped.size()) +
              " points skipped (no token, or past max_positions); run took " +
              std::to_string(static_cast<int>(c.wall_s + 0.5)) + " s.");
  h.push_back(
      "kv_tokens = every context the step read (decoders' and the prefill's cached); "
      "prefill_attention = n * (c + (n + 1) / 2) for the prefill of n tokens on c cached.");
  return h;
}

}  // namespace switchyard::cpu_engine
