// Perftest (perftest.h).
#include "bench/net_budget/perftest.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace switchyard::bench {

std::optional<double> Perftest(const std::string& tls, const std::string& test, uint64_t bytes,
                               int iters, int column, const std::string& flags) {
  if (std::system("command -v ucx_perftest >/dev/null 2>&1") != 0) return std::nullopt;
  static int port = 20000 + static_cast<int>(::getpid() % 20000);
  ++port;
  std::ostringstream cmd;
  cmd << "UCX_TLS=" << tls << " timeout 60 ucx_perftest " << flags << " -p " << port
      << " >/dev/null 2>&1 & sleep 0.5; UCX_TLS=" << tls << " timeout 60 ucx_perftest " << flags
      << " 127.0.0.1 -p " << port << " -t " << test << " -s " << bytes << " -n " << iters
      << " 2>/dev/null; wait";
  FILE* p = ::popen(cmd.str().c_str(), "r");
  if (p == nullptr) return std::nullopt;
  std::optional<double> value;
  char line[1024];
  while (std::fgets(line, sizeof(line), p) != nullptr) {
    std::istringstream in(line);
    std::string word;
    in >> word;
    if (word != "Final:") continue;
    double v[7] = {};
    for (double& x : v) in >> x;  // iterations, p50, avg, overall, bw avg, bw all, ...
    if (in) value = v[column];
  }
  ::pclose(p);
  return value;
}

}  // namespace switchyard::bench
