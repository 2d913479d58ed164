// Small numeric helpers shared by the policies (policy.cc, reference_policies.cc): seconds
// of a Duration and summaries of a policy input's predicted-wait quantiles. Not a public
// interface. Thread-safety: pure functions.
#pragma once

#include <vector>

#include "base/time.h"

namespace switchyard::scheduler::internal {

inline double S(Duration d) { return ToSeconds(d); }

// Mean of the quantiles (a cheap stand-in for the expected remaining wait); 0 when empty.
inline double MeanOf(const std::vector<Duration>& q) {
  if (q.empty()) return 0;
  double sum = 0;
  for (Duration d : q) sum += S(d);
  return sum / static_cast<double>(q.size());
}

// The middle quantile (the median for the five quantiles the core passes); 0 when empty.
inline double Median(const std::vector<Duration>& q) { return q.empty() ? 0 : S(q[q.size() / 2]); }

}  // namespace switchyard::scheduler::internal
