// `switchyard calibrate --peer HOST:PORT [--transport ucx] [--min 4K] [--max 256M]
//                       [--iters N] [--out FILE] [--label TEXT]`
// Sweeps message sizes through the real transport against a `switchyard worker`, prints
// P50/P95/P99 per size and the alpha-beta fit, and stores the fit (a v1::LinkCalibration
// as JSON) in FILE for the planner. The default --max is 256M to keep a run short here;
// pass --max 1G for the full 4 KiB..1 GiB sweep.
#include <cstdio>
#include <fstream>

#include "cli/command.h"
#include "kv_tiers/transport/calibrate.h"

namespace {

namespace tx = switchyard::kv_tiers::transport;

int Usage(const std::string& why) {
  std::fprintf(stderr,
               "calibrate: %s\nusage: switchyard calibrate --peer HOST:PORT [--transport ucx] "
               "[--min 4K] [--max 256M] [--iters N] [--out FILE] [--label TEXT]\n",
               why.c_str());
  return 2;
}

int RunCalibrate(const std::vector<std::string>& args) {
  tx::CalibrateOptions options;
  std::string out, label;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (i + 1 >= args.size()) return Usage("missing value after " + a);
    const std::string& v = args[++i];
    if (a == "--peer") {
      options.peer = v;
    } else if (a == "--transport") {
      options.transport = v;
    } else if (a == "--min" || a == "--max") {
      auto n = tx::ParseByteSize(v);
      if (!n.ok()) return Usage(n.status().message());
      (a == "--min" ? options.min_bytes : options.max_bytes) = *n;
    } else if (a == "--iters") {
      if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos || v.size() > 6) {
        return Usage("bad --iters " + v);
      }
      options.iters = static_cast<uint32_t>(std::stoul(v));
    } else if (a == "--out") {
      out = v;
    } else if (a == "--label") {
      label = v;
    } else {
      return Usage("unknown option " + a);
    }
  }
  if (options.peer.empty()) return Usage("--peer is required");
  if (label.empty()) {
    const char* tls = std::getenv("UCX_TLS");
    label = options.transport + "/" + (tls ? tls : "auto");
  }
  std::printf("%12s %8s %12s %12s %12s %12s\n", "bytes", "samples", "p50_us", "p95_us", "p99_us",
              "p50_MB/s");
  auto fit = tx::RunCalibration(options, [](const switchyard::net_budget::SizePercentiles& p) {
    std::printf("%12llu %8u %12.1f %12.1f %12.1f %12.1f\n",
                static_cast<unsigned long long>(p.bytes), p.samples, p.p50_s * 1e6, p.p95_s * 1e6,
                p.p99_s * 1e6, p.p50_s > 0 ? static_cast<double>(p.bytes) / p.p50_s / 1e6 : 0.0);
    std::fflush(stdout);
  });
  if (!fit.ok()) {
    std::fprintf(stderr, "calibrate: %s\n", fit.status().ToString().c_str());
    return 1;
  }
  std::printf("fit: alpha=%.2f us beta=%.4g s/B (bandwidth %.1f MB/s) r2=%.4f\n",
              fit->model.alpha_s * 1e6, fit->model.beta_s_per_byte, fit->model.bandwidth() / 1e6,
              fit->r_squared);
  auto json = tx::CalibrationJson(*fit, label);
  if (!json.ok()) {
    std::fprintf(stderr, "calibrate: %s\n", json.status().ToString().c_str());
    return 1;
  }
  if (!out.empty()) {
    std::ofstream f(out);
    f << *json << "\n";
    if (!f) {
      std::fprintf(stderr, "calibrate: cannot write %s\n", out.c_str());
      return 1;
    }
    std::printf("stored fit in %s\n", out.c_str());
  } else {
    std::printf("%s\n", json->c_str());
  }
  return 0;
}

}  // namespace

SY_REGISTER_COMMAND(calibrate, "calibrate",
                    "measure a peer path (size sweep, P50/P95/P99) and fit alpha/beta",
                    RunCalibrate);
