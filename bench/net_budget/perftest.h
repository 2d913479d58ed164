// The baselines of the transport benchmarks: ucx_perftest run on loopback beside this
// process, and the median of repeated trials. Shared by the peer transport rows
// (transport_bench.cc) and the direct worker-to-worker put rows (direct_put_bench.cc).
//
// Thread-safety: single-threaded use from a bench reporter.
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

namespace switchyard::bench {

// Trials per figure, on each side.
constexpr int kTransportTrials = 5;

// Runs ucx_perftest (server and client on loopback, same UCX_TLS, `flags` on both, e.g.
// "-e" for endpoints with peer error handling) and returns the value of `column` of its
// "Final:" line: 1 = 50th-percentile latency (us), 4 = average bandwidth (MB/s, MB =
// 2^20 B). nullopt without ucx_perftest on PATH or without a result.
std::optional<double> Perftest(const std::string& tls, const std::string& test, uint64_t bytes,
                               int iters, int column, const std::string& flags = "");

// The median of `v` (nullopt when empty).
inline std::optional<double> MedianOf(std::vector<double> v) {
  if (v.empty()) return std::nullopt;
  std::sort(v.begin(), v.end());
  return v[(v.size() - 1) / 2];
}

// The median of kTransportTrials runs of `f` (of those that gave a value). Both sides of
// a comparison get the same statistic: the best of a few short runs chased outliers on
// the shared VM (ucx_perftest over shared memory ranged 8.4-24 GB/s at 1 MiB within one
// hour).
template <typename F>
std::optional<double> Median(F f) {
  std::vector<double> v;
  for (int i = 0; i < kTransportTrials; ++i) {
    if (std::optional<double> x = f()) v.push_back(*x);
  }
  return MedianOf(std::move(v));
}

}  // namespace switchyard::bench
