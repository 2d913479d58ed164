// Link model: the alpha-beta cost of moving bytes over one link, and its calibration.
//
// time(bytes) = alpha + bytes * beta, where alpha is the fixed cost of a transfer
// (latency, setup) and beta the time per byte (1/bandwidth). Calibration takes (size,
// time) samples measured through a real transport (`switchyard calibrate`), reduces them
// to the median time per size (robust to outliers), and fits alpha and beta by ordinary
// least squares on those medians. It also keeps P50/P95/P99 per size. A LinkFit converts
// to and from v1::LinkCalibration so that it can be stored in a topology file.
//
// Ownership: plain values. Thread-safety: stateless functions; values are immutable once
// built.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/result.h"
#include "base/time.h"
#include "proto/switchyard/v1/topology.pb.h"

namespace switchyard::net_budget {

// One measurement: moving `bytes` took `seconds`.
struct Sample {
  uint64_t bytes = 0;
  double seconds = 0;
};

struct AlphaBeta {
  double alpha_s = 0;          // seconds per transfer
  double beta_s_per_byte = 0;  // seconds per byte

  double Seconds(uint64_t bytes) const {
    return alpha_s + static_cast<double>(bytes) * beta_s_per_byte;
  }
  Duration Time(uint64_t bytes) const {
    return Duration(static_cast<int64_t>(Seconds(bytes) * 1e9));
  }
  // Bytes per second (1/beta); 0 if beta is 0.
  double bandwidth() const { return beta_s_per_byte > 0 ? 1.0 / beta_s_per_byte : 0; }
  // The model of a link with a configured latency and bandwidth.
  static AlphaBeta FromLatencyBandwidth(double latency_s, double bytes_per_s) {
    return {latency_s, bytes_per_s > 0 ? 1.0 / bytes_per_s : 0};
  }
};

struct SizePercentiles {
  uint64_t bytes = 0;
  uint32_t samples = 0;
  double p50_s = 0;
  double p95_s = 0;
  double p99_s = 0;
};

struct LinkFit {
  AlphaBeta model;
  std::vector<SizePercentiles> per_size;  // ascending by bytes
  uint64_t samples = 0;
  double r_squared = 0;  // of the fit on the per-size medians
};

// The q-quantile (0..1) of `values` by linear interpolation between order statistics
// (the "type 7" definition of R and NumPy). `values` need not be sorted. InvalidArgument
// when empty or q is outside [0, 1].
Result<double> Percentile(std::vector<double> values, double q);

// Groups samples by size and returns P50/P95/P99 for each size, ascending by size.
// InvalidArgument on an empty input or a negative/non-finite time.
Result<std::vector<SizePercentiles>> PercentilesBySize(std::span<const Sample> samples);

// Least-squares alpha-beta fit on the per-size medians. Needs at least two distinct
// sizes. If the unconstrained fit gives a negative alpha, alpha is clamped to 0 and beta
// refitted through the origin; a non-positive beta is an error (times do not grow with
// size, so the samples cannot describe a link).
Result<LinkFit> FitAlphaBeta(std::span<const Sample> samples);

// Conversion to and from the topology schema.
v1::LinkCalibration ToProto(const LinkFit& fit);
Result<LinkFit> FromProto(const v1::LinkCalibration& proto);

}  // namespace switchyard::net_budget
