// Child processes for the benchmarks that drive the `switchyard` binary from outside
// (bench_api, bench_fidelity, bench_workers, bench_net_budget): where the binary is, a free
// loopback port, spawning with output to a log, whether a child has exited, stopping and
// reaping it, its CPU time, its log's text, and serve's /healthz.
//
// Ownership: a spawned child is the caller's to stop or reap (Terminate, Reap). Thread-safety:
// the functions hold no state; Spawn forks, so the child runs only async-signal-safe calls
// (the argv is built before the fork) besides redirecting its output.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace switchyard::bench {

// `switchyard` beside this binary ("switchyard" when /proc/self/exe cannot be read).
std::string SwitchyardBeside();

// $SWITCHYARD_BIN when set, else SwitchyardBeside().
std::string SwitchyardBinary();

// A loopback TCP port free now (the caller's child binds it soon after).
int FreeLoopbackPort();

// True when GET /healthz on 127.0.0.1:port answers 200 (Connection: close).
bool Healthy(int port);

// Runs argv[0] (a path) with `argv` and its stdout to `log` (truncated), and its stderr
// too when `with_stderr`; the child's pid (-1 when fork failed). The child exits 127
// when the exec fails.
pid_t Spawn(const std::vector<std::string>& argv, const std::string& log, bool with_stderr = true);

// True when the child `pid` has exited (reaped now) or cannot be waited for; false while it
// runs.
bool Exited(pid_t pid);

// SIGTERM to the child `pid`, then waits for it to exit.
void Terminate(pid_t pid);

// Waits up to `seconds` for the child `pid` to exit (polling every 50 ms), then SIGKILLs
// it and waits.
void Reap(pid_t pid, double seconds);

// User + system CPU seconds the process `pid` has used so far (/proc/PID/stat); 0 when
// unreadable.
double ProcessCpuSeconds(pid_t pid);

// Restricts every thread of process `pid` (0: this process) to the CPUs `first` .. `last`
// (sched_setaffinity on each /proc/PID/task entry; threads started later inherit it from
// their creator). False when a thread could not be pinned or the range is empty.
bool PinProcess(pid_t pid, int first, int last);

// The whole text of the file at `path` (a child's log); "" when unreadable.
std::string ReadText(const std::string& path);

}  // namespace switchyard::bench
