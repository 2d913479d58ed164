// bench_fidelity: how closely `switchyard replay` reproduces a real run of the same agent
// workload on the reference CPU engine (scripts/bench.sh fidelity).
//
// One run (fidelity_bench.cc), in a temporary folder, every step a separate process as
// bench/api does:
//   1. `switchyard calibrate --engine cpu --model configs/models/tiny-llama-4l.json` writes
//      this machine's step table (cpu_engine/calibrate/calibrate.h);
//   2. `switchyard convert` turns the committed sample of agent sessions
//      (tests/fixtures/agent_sessions_sample.jsonl) into a trace with --token-scale and
//      --time-scale (so the CPU engine computes it in minutes and both halves see the same
//      compressed tool waits) and no deadlines (the client does not submit them);
//   3. real: `switchyard serve --engine cpu --model ... --kv-pool-mib N` on a free loopback
//      port, the trace played by bench/fidelity/play_trace.py (clients/python's agent loop),
//      which also reads every node's startedMs / finishedMs / firstTokenMs; this is done
//      SY_BENCH_FIDELITY_REAL_RUNS times (3), each on a fresh server in real-<i>/: a real
//      run is a noisy sample (which moves the policy makes depends on when each event lands:
//      the bytes moved of one trace varied 23–45 MB across runs), so the replay, which is
//      deterministic, is compared with the mean of the runs, each run listed beside it;
//   4. the real path's latencies, measured from step 3's node timings: per tool, its
//      measured wait (finishedMs - startedMs) minus its recorded duration, toolOverheadS =
//      the median (the client's poll and report inside every wait, which the scheduler
//      learns as part of the tool); per LLM call revealed after another node, its start
//      minus that node's end minus its tools' measured waits, callOverheadS = the median
//      (SY_BENCH_FIDELITY_CALL_OVERHEAD >= 0 sets it instead);
//   5. replay: the trace through RunReplay (what `switchyard replay` runs) under policy
//      switchyard on replay/clusters/cpu-tiny-llama-4l.json with the pool size of step 3,
//      the table of step 1 and the callOverheadS and toolOverheadS of step 4 (written as
//      cluster.json in the folder, stepTable relative to it, and loaded back with
//      LoadCluster, as the CLI does), and once more with both 0 (cluster-no-overhead.json).
// Reported side by side (real: the mean over the runs of each figure, per workflow for
// the JCTs; the per-call samples pooled): JCT mean / P50 / P90 (nearest rank), TTFT P50
// (real: firstTokenMs minus the latest of arrival and the dependencies' ends, replay's
// definition), decisions by kind, bytes moved (real: per destination tier; replay: per traffic
// class; compared in total), with ratio = replay / real on each pair (goal: within 10 % on JCT
// mean, P90 and bytes moved); the replay without the overhead term's JCT, for comparison. The
// overhead is measured on the same runs it is compared with: it is the real path's client and
// service latency between events (which the replay does not simulate), not the JCT.
// The model has RANDOM WEIGHTS (its text is meaningless); only its timing matters here.
// Environment: SY_BENCH_FIDELITY_TOKEN_SCALE (0.02), _TIME_SCALE (0.1), _RATE (0.05
// workflows/s before the time scale), _POOL_MIB (6: the contexts outgrow it,
// so KV moves are compared; 32 MiB moves nothing on this workload), _REPEAT (1), _POLL (0.01 s),
// _REAL_RUNS (3), _KEEP=1 keeps the folder; SWITCHYARD_BIN (default: next to this binary).
//
// Thread-safety: single-threaded bench code.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "base/result.h"

namespace switchyard::bench::fidelity {

// Runs `command` through the shell, appending its stdout and stderr to `log`; the output,
// or Internal naming the command and its exit status.
::switchyard::Result<std::string> RunCommand(const std::string& command, const std::string& log);

// `switchyard serve` in a child process; stopped (SIGTERM) by the destructor.
class ServeProcess {
 public:
  ~ServeProcess();
  // Starts `binary serve <args> --listen 127.0.0.1:<free port> --data-dir <dir>/data`,
  // output to <dir>/serve.log; waits for /healthz (60 s) and reads the default token.
  Status Start(const std::string& binary, const std::vector<std::string>& args,
               const std::string& dir);
  int port() const { return port_; }
  const std::string& token() const { return token_; }

 private:
  int pid_ = -1;
  int port_ = 0;
  std::string token_;
};

// What the real half measured (play_trace.py's JSON).
struct RealRun {
  std::map<std::string, double> jct_s;  // completed workflows
  std::map<std::string, std::string> states;
  std::map<std::string, double> decisions_by_kind;
  std::map<std::string, double> bytes_moved_by_tier;
  double wall_s = 0;
  std::vector<double> ttft_s;                    // per LLM call, sorted
  std::vector<double> started_to_first_token_s;  // per LLM call, sorted
  std::vector<double> call_overhead_s;           // per revealed LLM call, sorted
  std::vector<double> tool_overhead_s;           // per tool, sorted
};
::switchyard::Result<RealRun> ReadRealRun(const std::string& path);

double EnvDouble(const char* name, double fallback);

// Median of sorted values (the mean of the middle two for an even count); 0 when empty.
double Median(const std::vector<double>& sorted);

}  // namespace switchyard::bench::fidelity
