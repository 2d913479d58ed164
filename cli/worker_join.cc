// `switchyard worker --join HOST:PORT --engine simulated|cpu [--model FILE_OR_DIR] [--id ID]
//                    [--kv-pool-bytes BYTES] [--role prefill|decode|mixed]
//                    [--kv-listen HOST:PORT|none] [--kv-capacity BYTES]
//                    [--credit-per-sender BYTES] [--credit-total BYTES]
//                    [--kv-transport-param KEY=VALUE]... [--direct-puts on|off]
//                    [--etcd URL [--cluster NAME] [--lease-ttl-s S]]
//                    [--protocol-version N] [--connect-timeout-s S] [--log-level LEVEL]`:
// an engine in its own process (engine cpu: the CPU engine over the model at --model, the
// one serve serves, computing the calls serve's scheduler batches), joined to a running
// `switchyard serve --remote-workers N
// --control-listen HOST:PORT` over the worker control protocol (workers/worker_agent.h),
// with its KV store (the pool's blocks, moved by serve over UCX under the credit this
// worker grants) on --kv-listen (default: this host's address on the control connection,
// any port; `none`: no store, serve keeps the blocks). The joined line names the store.
// --role: what serve's scheduler lets this worker run when it disaggregates calls (prefill
// only, decode only, or either: mixed, the default).
// --direct-puts (default on): carry out serve's put orders, putting blocks of this store
// straight into another worker's store (off: serve relays those moves through itself).
// --etcd: registers /switchyard/<cluster>/workers/<id> under a lease (TTL --lease-ttl-s,
// default 5) that serve --etcd watches.
// Prints "joined HOST:PORT as worker INDEX (id ID, protocol version V)" once welcomed, then
// runs the steps serve sends until serve says bye (exit 0), serve is lost (exit 1) or
// SIGINT/SIGTERM (it says bye first; exit 0). A refusal (e.g. a protocol version
// mismatch) prints serve's reason and exits 3. --protocol-version: what the hello claims
// (tests of the refusal).
#include <pthread.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "base/logging.h"
#include "net_budget/link_calibrate/calibrate.h"
#include "scheduler/disaggregation.h"
#include "workers/worker_agent.h"

namespace switchyard::cli {

namespace {

constexpr char kJoinUsage[] =
    "usage: switchyard worker --join HOST:PORT --engine simulated|cpu "
    "[--model FILE_OR_DIR] [--id ID] [--kv-pool-bytes BYTES] [--role prefill|decode|mixed] "
    "[--kv-listen HOST:PORT|none] "
    "[--kv-capacity BYTES] [--credit-per-sender BYTES] [--credit-total BYTES] "
    "[--kv-transport-param KEY=VALUE]... [--direct-puts on|off] "
    "[--etcd URL [--cluster NAME] [--lease-ttl-s S]] [--protocol-version N] "
    "[--connect-timeout-s S] [--log-level LEVEL]\n"
    "  a model replica (engine, KV pool, host and disk tiers) joined to a running serve\n";

int JoinUsage(const std::string& why) {
  std::fprintf(stderr, "worker: %s\n%s", why.c_str(), kJoinUsage);
  return 2;
}

// The flags of a joined worker.
struct JoinArgs {
  workers::AgentOptions agent;
  LogOptions log;
};

// The --join flags (every one takes a value); InvalidArgument says why for the usage text.
Result<JoinArgs> ParseJoinArgs(const std::vector<std::string>& args) {
  auto bad = [](const std::string& why) { return Status::InvalidArgument(why); };
  JoinArgs j;
  workers::AgentOptions& o = j.agent;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (i + 1 >= args.size()) return bad("missing value after " + a);
    const std::string& v = args[++i];
    if (a == "--join") {
      o.join = v;
    } else if (a == "--engine") {
      o.engine = v;
    } else if (a == "--id") {
      o.worker_id = v;
    } else if (a == "--model") {
      o.model = v;
    } else if (a == "--kv-pool-bytes" || a == "--kv-capacity" || a == "--credit-per-sender" ||
               a == "--credit-total") {
      auto n = net_budget::ParseByteSize(v);
      if (!n.ok()) return bad(a + ": " + n.status().message());
      if (a == "--kv-pool-bytes") o.kv_pool_capacity_bytes = *n;
      if (a == "--kv-capacity") o.kv_capacity_bytes = *n;
      if (a == "--credit-per-sender") o.credit_per_sender_bytes = *n;
      if (a == "--credit-total") o.credit_total_bytes = *n;
    } else if (a == "--kv-listen") {
      o.kv_listen = v;
    } else if (a == "--role") {
      if (!scheduler::ParseWorkerRole(v).ok())
        return bad("--role '" + v + "': want prefill, decode or mixed");
      o.role = v;
    } else if (a == "--direct-puts") {
      if (v != "on" && v != "off") return bad("--direct-puts '" + v + "': want on or off");
      o.direct_puts = v == "on";
    } else if (a == "--kv-finish-delay-ms") {  // tests: a slow receiver
      o.kv_finish_delay = std::chrono::milliseconds(std::strtol(v.c_str(), nullptr, 10));
    } else if (a == "--etcd") {
      o.etcd_url = v;
    } else if (a == "--cluster") {
      o.cluster = v;
    } else if (a == "--lease-ttl-s") {
      long ttl = std::strtol(v.c_str(), nullptr, 10);
      if (ttl < 1) return bad("--lease-ttl-s needs S >= 1");
      o.lease_ttl = std::chrono::seconds(ttl);
    } else if (a == "--kv-transport-param") {
      size_t eq = v.find('=');
      if (eq == 0 || eq == std::string::npos)
        return bad("--kv-transport-param '" + v + "': want KEY=VALUE");
      o.kv_transport_params[v.substr(0, eq)] = v.substr(eq + 1);
    } else if (a == "--protocol-version") {
      o.protocol_version = static_cast<uint32_t>(std::strtoul(v.c_str(), nullptr, 10));
      if (o.protocol_version == 0) return bad("--protocol-version needs N >= 1");
    } else if (a == "--connect-timeout-s") {
      o.connect_timeout = Seconds(std::atof(v.c_str()));
    } else if (a == "--log-level") {
      if (!ParseLogLevel(v, &j.log.level)) return bad("bad --log-level " + v);
    } else {
      return bad("unknown option " + a + " (with --join)");
    }
  }
  return j;
}

// SIGINT and SIGTERM blocked in this thread (and the threads it starts), for sigwait.
sigset_t BlockStopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
}

}  // namespace

const char* JoinedWorkerUsage() { return kJoinUsage; }

bool WantsJoin(const std::vector<std::string>& args) {
  for (const std::string& a : args)
    if (a == "--join") return true;
  return false;
}

int RunJoinedWorker(const std::vector<std::string>& args) {
  Result<JoinArgs> parsed = ParseJoinArgs(args);
  if (!parsed.ok()) return JoinUsage(parsed.status().message());
  const workers::AgentOptions& o = parsed->agent;
  InitLogging(parsed->log);
  sigset_t set = BlockStopSignals();
  auto agent = workers::WorkerAgent::Join(o);
  if (!agent.ok()) {
    std::fprintf(stderr, "worker: %s\n", agent.status().ToString().c_str());
    return agent.status().IsFailedPrecondition() ? 3 : 1;
  }
  std::string kv = (*agent)->kv_address();
  std::printf("joined %s as worker %d (id %s, protocol version %u, kv store %s)\n", o.join.c_str(),
              (*agent)->welcome().worker_index(), (*agent)->worker_id().c_str(),
              (*agent)->welcome().protocol_version(), kv.empty() ? "none" : kv.c_str());
  std::fflush(stdout);
  workers::WorkerAgent* ag = agent->get();
  std::thread signals([set, ag]() {
    int sig = 0;
    sigwait(&set, &sig);
    if (sig != 0) ag->Stop();
  });
  Status st = ag->Run();
  std::printf("worker stopped: %s steps_run=%llu\n", st.ok() ? "ok" : st.ToString().c_str(),
              static_cast<unsigned long long>(ag->steps_run()));
  std::fflush(stdout);
  // The signal thread still waits: end the process without joining it.
  std::_Exit(st.ok() ? 0 : 1);
}

}  // namespace switchyard::cli
