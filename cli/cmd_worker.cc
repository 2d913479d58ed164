// `switchyard worker --listen HOST:PORT [--capacity BYTES] [--transport ucx]
//                    [--credit-per-sender BYTES] [--credit-total BYTES]
//                    [--verify-offload BYTES]
//                    [--transport-param KEY=VALUE]... [--log-level LEVEL]`
// Runs a KV store (kv_store/kv_store_server.h) until SIGINT/SIGTERM.
// `switchyard worker --join HOST:PORT --engine simulated|cpu ...`: instead an engine joined to
// a running serve (cli/worker_join.cc).
// --credit-per-sender (alias --credit-bytes) / --credit-total: the receiver-granted credit
// (docs/design.md invariant 7) it advertises in its hello ack and enforces on every put:
// bytes accepted and not yet committed or rejected per sender (default 512M) and over all
// senders together, the incast limit (default 2G); a put over either is refused with
// reason `credit`.
// --verify-offload: puts this large or larger are verified on a thread of their own; 0
// verifies all on the transport's thread (default: 256K without TCP, 4M with TCP in
// UCX_TLS; KvStoreServerOptions::verify_offload_bytes).
// --transport-param: a transport setting (TransportConfig::params), e.g. err_mode=none or
// a UCX key without its UCX_ prefix (TLS=sm,self); repeatable.
// Prints "listening on HOST:PORT communicator_epoch=N verify_offload_bytes=N
// credit_per_sender=N credit_total=N" once ready (port 0 picks one).
// UCX_TLS in the environment selects UCX's transports (see transport/README.md).
#include <csignal>
#include <cstdio>

#include "base/logging.h"
#include "cli/command.h"
#include "kv_store/kv_store_server.h"
#include "net_budget/link_calibrate/calibrate.h"

namespace switchyard::cli {
bool WantsJoin(const std::vector<std::string>& args);       // cli/worker_join.cc
int RunJoinedWorker(const std::vector<std::string>& args);  // cli/worker_join.cc
const char* JoinedWorkerUsage();                            // cli/worker_join.cc
}  // namespace switchyard::cli

namespace {

using switchyard::kv_store::KvStoreServer;
using switchyard::kv_store::KvStoreServerOptions;
using switchyard::net_budget::ParseByteSize;

std::atomic<KvStoreServer*> g_worker{nullptr};

void OnSignal(int) {
  KvStoreServer* w = g_worker.load();
  if (w != nullptr) w->Stop();
}

constexpr char kWorkerUsage[] =
    "usage: switchyard worker --listen HOST:PORT [--capacity BYTES] "
    "[--transport ucx] [--credit-per-sender BYTES] [--credit-total BYTES] "
    "[--verify-offload BYTES] [--transport-param KEY=VALUE]... [--log-level LEVEL]\n"
    "  a host tier for peers: KV blocks over UCX\n";

int WorkerUsage(const std::string& why) {
  std::fprintf(stderr, "worker: %s\n%s", why.c_str(), kWorkerUsage);
  return 2;
}

int RunWorker(const std::vector<std::string>& args) {
  if (!args.empty() && (args[0] == "-h" || args[0] == "--help")) {
    std::printf("%s", kWorkerUsage);
    std::printf("%s", switchyard::cli::JoinedWorkerUsage());
    return 0;
  }
  // --join: an engine joined to a running serve (cli/worker_join.cc).
  if (switchyard::cli::WantsJoin(args)) return switchyard::cli::RunJoinedWorker(args);
  KvStoreServerOptions options;
  options.listen.clear();
  switchyard::LogOptions log;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (i + 1 >= args.size()) return WorkerUsage("missing value after " + a);
    const std::string& v = args[++i];
    if (a == "--listen") {
      options.listen = v;
    } else if (a == "--transport") {
      options.transport = v;
    } else if (a == "--capacity" || a == "--credit-bytes" || a == "--credit-per-sender" ||
               a == "--credit-total" || a == "--verify-offload") {
      auto n = ParseByteSize(v);
      if (!n.ok()) return WorkerUsage(a + ": " + n.status().message());
      if (a == "--capacity") options.capacity_bytes = *n;
      if (a == "--credit-bytes" || a == "--credit-per-sender") options.max_inflight_bytes = *n;
      if (a == "--credit-total") options.total_inflight_bytes = *n;
      if (a == "--verify-offload") options.verify_offload_bytes = *n;
    } else if (a == "--transport-param") {
      size_t eq = v.find('=');
      if (eq == 0 || eq == std::string::npos) {
        return WorkerUsage("--transport-param '" + v + "': want KEY=VALUE");
      }
      options.transport_config.params[v.substr(0, eq)] = v.substr(eq + 1);
    } else if (a == "--log-level") {
      if (!switchyard::ParseLogLevel(v, &log.level)) return WorkerUsage("bad --log-level " + v);
    } else {
      return WorkerUsage("unknown option " + a);
    }
  }
  if (options.listen.empty()) return WorkerUsage("--listen is required");
  switchyard::InitLogging(log);
  auto worker = KvStoreServer::Start(options);
  if (!worker.ok()) {
    std::fprintf(stderr, "worker: %s\n", worker.status().ToString().c_str());
    return 1;
  }
  g_worker = worker->get();
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  std::printf(
      "listening on %s communicator_epoch=%llu verify_offload_bytes=%llu credit_per_sender=%llu "
      "credit_total=%llu\n",
      (*worker)->address().c_str(),
      static_cast<unsigned long long>((*worker)->communicator_epoch()),
      static_cast<unsigned long long>((*worker)->verify_offload_bytes()),
      static_cast<unsigned long long>((*worker)->credit_limits().per_sender_bytes),
      static_cast<unsigned long long>((*worker)->credit_limits().total_bytes));
  std::fflush(stdout);
  (*worker)->Run();
  g_worker = nullptr;
  auto st = (*worker)->stats();
  std::printf(
      "worker stopped: puts_committed=%llu puts_rejected=%llu puts_refused_credit=%llu "
      "max_credit_in_use=%llu puts_offloaded=%llu gets=%llu\n",
      static_cast<unsigned long long>(st.puts_committed),
      static_cast<unsigned long long>(st.puts_rejected),
      static_cast<unsigned long long>(st.puts_refused_credit),
      static_cast<unsigned long long>(st.max_credit_in_use_bytes),
      static_cast<unsigned long long>(st.puts_offloaded),
      static_cast<unsigned long long>(st.gets_served));
  return 0;
}

}  // namespace

SY_REGISTER_COMMAND(worker, "worker",
                    "run a model replica that joins a serve (--join), or host a host tier "
                    "for peers (KV blocks over UCX)",
                    RunWorker);
