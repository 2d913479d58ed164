// `switchyard calibrate --peer HOST:PORT [--transport ucx] [--min 4K] [--max 256M]
//                       [--iters N] [--out FILE] [--label TEXT]
//                       [--link NAME --links-out FILE]`
// Sweeps message sizes through the real transport against a `switchyard worker`, prints
// P50/P95/P99 per size and the alpha-beta fit, and stores the fit (a v1::LinkCalibration
// as JSON) in FILE for the planner. With --links-out, the fit is also added to a link
// file (v1::LinkFile, scheduler/link_file.h) as the figures of the serve topology link
// NAME ("pcie0", "disk0", "nvlink1", ...), replacing an earlier entry for it; `switchyard
// serve --links FILE` loads them. The default --max is 256M to keep a run short here;
// pass --max 1G for the full 4 KiB..1 GiB sweep.
//
// `switchyard calibrate --engine cpu [--model FILE] [--block-tokens N] -o FILE
//                       [--prefill L] [--decode L] [--kv L] [--cached L] [--reps N]`
// Measures the reference CPU engine's step time over a grid of batch shapes
// (cpu_engine/calibrate/calibrate.h) and writes the step table TableStepCost reads
// (configs/step_tables/README.md), then loads it back and prints the fit.
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "cli/command.h"
#include "executors/engine_kind.h"
#include "net_budget/link_calibrate/calibrate.h"
#include "proto/json.h"
#include "scheduler/link_file.h"
#if SWITCHYARD_HAVE_CPU_CALIBRATE
#include "cpu_engine/calibrate/calibrate.h"
#include "executors/step_cost.h"
#endif

namespace {

constexpr const char* kEngineUsage =
    "usage: switchyard calibrate --engine cpu [--model FILE] [--block-tokens N] -o FILE\n"
    "  [--prefill 0,16,64,256] [--decode 0,1,4,16] [--kv 0,512,2048,8192]\n"
    "  [--cached 0,512,2048] [--reps 5]\n"
    "  Measures the CPU engine's step time (one CpuEngine on a real-time loop) at every\n"
    "  prefill tokens x decode sequences x decoders' KV tokens x the prefill's cached tokens\n"
    "  point, the median of --reps steps,\n"
    "  and writes the CSV step table TableStepCost reads (--model default:\n"
    "  configs/models/tiny-llama-4l.json, random weights).\n";

#if SWITCHYARD_HAVE_CPU_CALIBRATE
namespace cpu = switchyard::cpu_engine;

int EngineUsage(const std::string& why) {
  std::fprintf(stderr, "calibrate: %s\n%s", why.c_str(), kEngineUsage);
  return 2;
}

// "0,16,64": whole numbers >= 0; false on anything else.
bool ParseList(const std::string& v, std::vector<int64_t>* out) {
  out->clear();
  size_t start = 0;
  while (start <= v.size()) {
    size_t comma = v.find(',', start);
    if (comma == std::string::npos) comma = v.size();
    std::string item = v.substr(start, comma - start);
    if (item.empty() || item.size() > 9 ||
        item.find_first_not_of("0123456789") != std::string::npos)
      return false;
    out->push_back(std::stoll(item));
    start = comma + 1;
  }
  return !out->empty();
}

bool ParseWhole(const std::string& v, int64_t lo, int64_t* out) {
  if (v.empty() || v.size() > 9 || v.find_first_not_of("0123456789") != std::string::npos)
    return false;
  *out = std::stoll(v);
  return *out >= lo;
}

int RunEngineCalibrate(const std::vector<std::string>& args) {
  std::string engine, model_path = "configs/models/tiny-llama-4l.json", out;
  cpu::CalibrationOptions o;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-h" || a == "--help") return std::printf("%s", kEngineUsage), 0;
    if (i + 1 >= args.size()) return EngineUsage(a + " needs a value");
    const std::string& v = args[++i];
    int64_t n = 0;
    if (a == "--engine") {
      engine = v;
    } else if (a == "--model") {
      model_path = v;
    } else if (a == "-o" || a == "--out") {
      out = v;
    } else if (a == "--block-tokens") {
      if (!ParseWhole(v, 1, &n))
        return EngineUsage("--block-tokens needs a whole number >= 1, not '" + v + "'");
      o.block_tokens = n;
    } else if (a == "--reps") {
      if (!ParseWhole(v, 1, &n))
        return EngineUsage("--reps needs a whole number >= 1, not '" + v + "'");
      o.grid.repetitions = static_cast<int>(n);
    } else if (a == "--prefill" || a == "--decode" || a == "--kv" || a == "--cached") {
      auto* axis = a == "--prefill"  ? &o.grid.prefill_tokens
                   : a == "--decode" ? &o.grid.decode_seqs
                   : a == "--kv"     ? &o.grid.kv_tokens
                                     : &o.grid.prefill_cached;
      if (!ParseList(v, axis))
        return EngineUsage(a + " needs whole numbers >= 0 like 0,16,64, not '" + v + "'");
    } else {
      return EngineUsage("unknown option " + a);
    }
  }
  // Step times are measured on an engine that computes (the CPU engine).
  if (!switchyard::executors::EngineComputes(engine))
    return EngineUsage("--engine must be cpu, not '" + engine + "'");
  if (out.empty()) return EngineUsage("-o FILE is required");
  auto model = cpu::Model::Load(model_path);
  if (!model.ok()) {
    std::fprintf(stderr, "calibrate: --model %s: %s\n", model_path.c_str(),
                 model.status().ToString().c_str());
    return 1;
  }
  std::printf("calibrating the cpu engine: %s\n", (*model)->shape().Describe().c_str());
  std::printf("%14s %11s %9s %14s %12s\n", "prefill_tokens", "decode_seqs", "kv_tokens",
              "prefill_cached", "median_ms");
  o.on_point = [](const cpu::CalibrationPoint& p) {
    std::printf("%14lld %11lld %9lld %14lld %12.3f\n", static_cast<long long>(p.prefill_tokens),
                static_cast<long long>(p.decode_seqs), static_cast<long long>(p.kv_tokens),
                static_cast<long long>(p.prefill_cached), p.step_time_s * 1e3);
    std::fflush(stdout);
  };
  auto cal = cpu::CalibrateCpuEngine(**model, o);
  if (!cal.ok()) {
    std::fprintf(stderr, "calibrate: %s\n", cal.status().ToString().c_str());
    return 1;
  }
  for (const std::string& s : cal->skipped) std::printf("skipped %s\n", s.c_str());
  std::string csv = cpu::StepTableCsv(*cal, cpu::CalibrationHeader(**model, model_path, o, *cal));
  std::ofstream f(out, std::ios::binary | std::ios::trunc);
  f << csv;
  f.close();
  if (!f) return std::fprintf(stderr, "calibrate: cannot write %s\n", out.c_str()), 1;
  auto table = switchyard::executors::TableStepCost::FromText(csv, out);
  if (!table.ok()) {
    std::fprintf(stderr, "calibrate: the table does not fit: %s\n",
                 table.status().ToString().c_str());
    return 1;
  }
  for (const auto& p : table->planes())
    std::printf(
        "fit plane: %.3f ms + %.4f ms/prefill token + %.4f ms/decode seq + %.6f ms/kv token"
        " + %.3f us/prefill attention pair\n",
        p.intercept_s * 1e3, p.per_prefill_token_s * 1e3, p.per_decode_seq_s * 1e3,
        p.per_kv_token_s * 1e3, p.per_prefill_attention_s * 1e6);
  std::printf("wrote %zu rows to %s in %.0f s\n", cal->points.size(), out.c_str(), cal->wall_s);
  return 0;
}
#endif

namespace tx = switchyard::net_budget;  // the link calibration (net_budget/link_calibrate)

constexpr char kCalibrateUsage[] =
    "usage: switchyard calibrate --peer HOST:PORT [--transport ucx] "
    "[--min 4K] [--max 256M] [--iters N] [--out FILE] [--label TEXT]\n"
    "         [--link NAME --links-out FILE]\n"
    "       switchyard calibrate --engine cpu [--model FILE] [--block-tokens N] -o FILE\n";

int CalibrateUsage(const std::string& why) {
  std::fprintf(stderr, "calibrate: %s\n%s", why.c_str(), kCalibrateUsage);
  return 2;
}

// The fit (`calibration_json`, CalibrationJson's) as link `link` of the link file `path`.
switchyard::Status StoreInLinkFile(const std::string& path, const std::string& link,
                                   const std::string& label, const tx::CalibrateOptions& options,
                                   const std::string& calibration_json) {
  switchyard::v1::MeasuredLink m;
  SY_RETURN_IF_ERROR(switchyard::proto::ParseJson(calibration_json, m.mutable_calibration()));
  m.set_link(link);
  m.set_label(label);
  m.set_transport(options.transport);
  m.set_peer(options.address);
  m.set_min_bytes(options.min_bytes);
  m.set_max_bytes(options.max_bytes);
  m.set_iters(options.iters);
  return switchyard::scheduler::AddToLinkFile(path, m);
}

// The flags of a peer calibration.
struct PeerArgs {
  tx::CalibrateOptions options;
  std::string out, label, link, links_out;
};

// The peer calibration's flags (every one takes a value), checked; InvalidArgument says why
// for the usage text.
switchyard::Result<PeerArgs> ParsePeerArgs(const std::vector<std::string>& args) {
  auto bad = [](const std::string& why) { return switchyard::Status::InvalidArgument(why); };
  PeerArgs p;
  tx::CalibrateOptions& options = p.options;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (i + 1 >= args.size()) return bad("missing value after " + a);
    const std::string& v = args[++i];
    if (a == "--peer") {
      options.address = v;
    } else if (a == "--transport") {
      options.transport = v;
    } else if (a == "--min" || a == "--max") {
      auto n = tx::ParseByteSize(v);
      if (!n.ok()) return bad(n.status().message());
      (a == "--min" ? options.min_bytes : options.max_bytes) = *n;
    } else if (a == "--iters") {
      if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos || v.size() > 6) {
        return bad("bad --iters " + v);
      }
      options.iters = static_cast<uint32_t>(std::stoul(v));
    } else if (a == "--out") {
      p.out = v;
    } else if (a == "--label") {
      p.label = v;
    } else if (a == "--link") {
      p.link = v;
    } else if (a == "--links-out") {
      p.links_out = v;
    } else {
      return bad("unknown option " + a);
    }
  }
  if (options.address.empty()) return bad("--peer is required");
  if (p.link.empty() != p.links_out.empty())
    return bad("--link NAME and --links-out FILE go together (the link file names each link)");
  return p;
}

// The fit's JSON into --out (or stdout when neither --out nor --links-out is given) and the
// link file; 0, or 1 after saying why on stderr.
int StoreFit(const PeerArgs& p, const std::string& json) {
  if (!p.out.empty()) {
    std::ofstream f(p.out);
    f << json << "\n";
    if (!f) {
      std::fprintf(stderr, "calibrate: cannot write %s\n", p.out.c_str());
      return 1;
    }
    std::printf("stored fit in %s\n", p.out.c_str());
  } else if (p.links_out.empty()) {
    std::printf("%s\n", json.c_str());
  }
  if (!p.links_out.empty()) {
    switchyard::Status st = StoreInLinkFile(p.links_out, p.link, p.label, p.options, json);
    if (!st.ok()) return std::fprintf(stderr, "calibrate: %s\n", st.ToString().c_str()), 1;
    std::printf("stored link %s in %s\n", p.link.c_str(), p.links_out.c_str());
  }
  return 0;
}

// --peer: the size sweep against a worker, its percentiles and alpha-beta fit.
int RunPeerCalibrate(const std::vector<std::string>& args) {
  switchyard::Result<PeerArgs> parsed = ParsePeerArgs(args);
  if (!parsed.ok()) return CalibrateUsage(parsed.status().message());
  PeerArgs& p = *parsed;
  if (p.label.empty()) {
    const char* tls = std::getenv("UCX_TLS");
    p.label = p.options.transport + "/" + (tls ? tls : "auto");
  }
  std::printf("%12s %8s %12s %12s %12s %12s\n", "bytes", "samples", "p50_us", "p95_us", "p99_us",
              "p50_MB/s");
  auto fit = tx::RunCalibration(p.options, [](const switchyard::net_budget::SizePercentiles& s) {
    std::printf("%12llu %8u %12.1f %12.1f %12.1f %12.1f\n",
                static_cast<unsigned long long>(s.bytes), s.samples, s.p50_s * 1e6, s.p95_s * 1e6,
                s.p99_s * 1e6, s.p50_s > 0 ? static_cast<double>(s.bytes) / s.p50_s / 1e6 : 0.0);
    std::fflush(stdout);
  });
  if (!fit.ok()) {
    std::fprintf(stderr, "calibrate: %s\n", fit.status().ToString().c_str());
    return 1;
  }
  std::printf("fit: alpha=%.2f us beta=%.4g s/B (bandwidth %.1f MB/s) r2=%.4f\n",
              fit->model.alpha_s * 1e6, fit->model.beta_s_per_byte, fit->model.bandwidth() / 1e6,
              fit->r_squared);
  auto json = tx::CalibrationJson(*fit, p.label);
  if (!json.ok()) {
    std::fprintf(stderr, "calibrate: %s\n", json.status().ToString().c_str());
    return 1;
  }
  return StoreFit(p, *json);
}

int RunCalibrate(const std::vector<std::string>& args) {
  if (!args.empty() && (args[0] == "-h" || args[0] == "--help"))
    return std::printf("%s", kCalibrateUsage), 0;
  for (const std::string& a : args) {
    if (a != "--engine") continue;
#if SWITCHYARD_HAVE_CPU_CALIBRATE
    return RunEngineCalibrate(args);
#else
    std::fprintf(stderr, "calibrate: --engine cpu: this build has no CPU engine\n%s", kEngineUsage);
    return 2;
#endif
  }
  return RunPeerCalibrate(args);
}

}  // namespace

SY_REGISTER_COMMAND(calibrate, "calibrate",
                    "measure a peer path (size sweep, P50/P95/P99) and fit alpha/beta, or "
                    "(--engine cpu) the CPU engine's step times into a step table",
                    RunCalibrate);
