// Transport and KV-store benchmarks against ucx_perftest, same transport, size and run:
//   - KV-store put throughput (KvStoreClient -> KvStoreServer: credit, header, bytes, validation,
//     commit, ack) and raw transport tag bandwidth (PostSend/PostRecv) at 1 MiB and
//     64 MiB, over TCP (UCX_TLS=tcp) and shared memory (UCX_TLS=sm,self), against
//     `ucx_perftest -t tag_bw` with the same UCX_TLS, message size and endpoint error
//     handling (`-e` over TCP, where ours detect failed peers; the figure without `-e`
//     is reported too, as a second row);
//   - 8 KiB latency: half the round trip of a tagged ping-pong through the transport (P50)
//     against `ucx_perftest -t tag_lat` (its 50th-percentile one-way latency).
// Paths: UCX_TLS=tcp, and UCX_TLS=sm,self (shared memory; err_mode=none, see Config).
// Both sides run on loopback on this machine: our two endpoints are two UCX workers in
// this process (each with its own progress thread), ucx_perftest's are two processes.
// ucx_perftest reports MB/s with MB = 2^20 B; so do these results. Without ucx_perftest
// on PATH the results carry no baseline. Each figure is the median of kTransportTrials runs on
// each side.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/common/report.h"
#include "bench/net_budget/perftest.h"
#include "kv_store/kv_store_client.h"
#include "kv_store/kv_store_server.h"
#include "transport/transport.h"

namespace switchyard::kv_store {
namespace {

using bench::kMiB;
using bench::Median;
using bench::Perftest;

double Seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// Messages per timed run (SY_TRANSPORT_BENCH_ITERS overrides both sizes' counts).
int Iterations(uint64_t bytes) {
  if (const char* n = std::getenv("SY_TRANSPORT_BENCH_ITERS")) return std::max(1, std::atoi(n));
  return bytes >= (64u << 20) ? 32 : 1024;
}

// UCX 1.13's shared memory transports cannot run under UCX's peer error mode, so the
// shared-memory runs use err_mode=none (as ucx_perftest does by default; the transport's
// control connection still detects a dead peer); TCP keeps UCX's peer mode, as in
// production.
transport::TransportConfig Config(const std::string& tls) {
  transport::TransportConfig c;
  c.params["TLS"] = tls;
  if (tls.find("tcp") == std::string::npos) c.params["err_mode"] = "none";
  // For A/B runs of UCX's two connection flows ("client-server", "address").
  if (const char* v = std::getenv("SY_TRANSPORT_BENCH_CONNECT")) c.params["connect"] = v;
  return c;
}

// Two UCX workers in this process, b connected to a.
struct Endpoints {
  std::unique_ptr<transport::Transport> a, b;
  transport::EndpointId b_to_a = 0;
};

Result<Endpoints> Connect(const std::string& tls) {
  Endpoints e;
  SY_ASSIGN_OR_RETURN(e.a, transport::TransportRegistry::Global().Create("ucx", Config(tls)));
  SY_ASSIGN_OR_RETURN(e.b, transport::TransportRegistry::Global().Create("ucx", Config(tls)));
  SY_ASSIGN_OR_RETURN(std::string addr, e.a->Listen("127.0.0.1:0"));
  SY_ASSIGN_OR_RETURN(e.b_to_a, e.b->Connect(addr));
  return e;
}

// Puts or messages kept in flight at once: enough to cover a hand-off and a checksum per
// message at 1 MiB, and to overlap the receiver's validation of one 64 MiB put with the
// transfer of the next.
int Window(uint64_t bytes) { return bytes >= (64u << 20) ? 4 : 8; }

// Distinct buffers a PeerPutBandwidth worker writes in turn: one per block id (2 *
// Window() ids, each commit supersedes an older copy) and one staging buffer per put in
// flight.
int PutWorkingSet(uint64_t bytes) { return 3 * Window(bytes); }

// Raw tag bandwidth b -> a in MB/s, Window() messages in flight (each receive is posted
// before its send, as a peer's data receive is). The receives land in `destinations`
// buffers in turn (default Window(): the set stays in cache at 1 MiB, as ucx_perftest's
// single buffer does; PutWorkingSet(): as cold as a peer worker's).
Result<double> TagBandwidth(Endpoints& e, uint64_t bytes, int destinations = 0) {
  const int window = Window(bytes);
  const int ndst = std::max(destinations, window);
  std::vector<char> src(bytes, 7);
  std::vector<std::vector<char>> dst(ndst, std::vector<char>(bytes, 0));
  int next_dst = 0;
  transport::DescriptorList s{{src.data(), bytes}};
  struct Slot {
    transport::TransferHandle r, w;
  };
  std::vector<Slot> slots(window);
  auto post = [&](int i, transport::Tag tag) -> Status {
    SY_ASSIGN_OR_RETURN(slots[i].r, e.a->PostRecv({{dst[next_dst++ % ndst].data(), bytes}}, tag,
                                                  ~transport::Tag{0}, {}));
    SY_ASSIGN_OR_RETURN(slots[i].w, e.b->PostSend(e.b_to_a, s, tag, {}));
    return Status::OK();
  };
  auto finish = [&](int i) -> Status {
    SY_RETURN_IF_ERROR(slots[i].w.wait());
    Status st = slots[i].r.wait();
    slots[i] = Slot{};
    return st;
  };
  SY_RETURN_IF_ERROR(post(0, 1));  // warm-up (connection, registration)
  SY_RETURN_IF_ERROR(finish(0));
  const int iters = Iterations(bytes);
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) {
    int slot = i % window;
    if (i >= window) SY_RETURN_IF_ERROR(finish(slot));
    SY_RETURN_IF_ERROR(post(slot, 2 + i));
  }
  for (int i = std::max(0, iters - window); i < iters; ++i) SY_RETURN_IF_ERROR(finish(i % window));
  return bytes * iters / Seconds(std::chrono::steady_clock::now() - t0) / kMiB;
}

// Half the round trip of an 8 KiB ping-pong, P50, in microseconds.
Result<double> PingPongHalfRttUs(Endpoints& e, uint64_t bytes) {
  const transport::EndpointId a_to_b = 1;  // a registered b as its first peer when it accepted
  std::vector<char> b1(bytes, 1), b2(bytes, 0), a1(bytes, 0);
  transport::DescriptorList bs{{b1.data(), bytes}}, br{{b2.data(), bytes}}, ab{{a1.data(), bytes}};
  std::vector<double> samples;
  for (int i = 0; i < 400; ++i) {
    transport::Tag ping = 1000 + 2 * i, pong = ping + 1;
    auto t0 = std::chrono::steady_clock::now();
    SY_ASSIGN_OR_RETURN(transport::TransferHandle ra,
                        e.a->PostRecv(ab, ping, ~transport::Tag{0}, {}));
    SY_ASSIGN_OR_RETURN(transport::TransferHandle rb,
                        e.b->PostRecv(br, pong, ~transport::Tag{0}, {}));
    SY_ASSIGN_OR_RETURN(transport::TransferHandle sb, e.b->PostSend(e.b_to_a, bs, ping, {}));
    SY_RETURN_IF_ERROR(ra.wait());
    SY_ASSIGN_OR_RETURN(transport::TransferHandle sa, e.a->PostSend(a_to_b, ab, pong, {}));
    SY_RETURN_IF_ERROR(rb.wait());
    SY_RETURN_IF_ERROR(sb.wait());
    SY_RETURN_IF_ERROR(sa.wait());
    if (i >= 50) {
      samples.push_back(Seconds(std::chrono::steady_clock::now() - t0) * 1e6 / 2);
    }
  }
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

// KV-store put throughput in MB/s through KvStoreClient::PostPut, Window() puts in flight, each
// one block of `bytes` with its stored checksum: credit, header, bytes, the worker's
// checks (length, checksum,
// owner, epochs, generation), commit, ack with the credit returned. The puts rewrite a
// rotating set of 2 * Window() block ids at rising generations, so each commit
// supersedes an older copy and the worker's memory is recycled as in a full host tier
// (a fresh buffer per put would add first-touch page faults that ucx_perftest, which
// reuses its buffers, does not pay).
Result<double> PeerPutBandwidth(const std::string& tls, uint64_t bytes) {
  const int window = Window(bytes);
  KvStoreServerOptions wo;
  wo.capacity_bytes = bytes * (3 * window + 2);
  wo.max_inflight_bytes = bytes * window;
  wo.max_inflight_transfers = std::max(64, window);
  wo.transport_config = Config(tls);
  if (const char* v = std::getenv("SY_TRANSPORT_BENCH_VERIFY_OFFLOAD")) {  // for A/B runs
    wo.verify_offload_bytes = std::strtoull(v, nullptr, 10);
  }
  SY_ASSIGN_OR_RETURN(auto worker, KvStoreServer::Start(wo));
  std::thread serve([&] { worker->Run(); });
  Result<double> out = [&]() -> Result<double> {
    KvStoreClientOptions co;
    co.transport_config = Config(tls);
    SY_ASSIGN_OR_RETURN(auto client, KvStoreClient::Connect(worker->address(), co));
    std::vector<char> block(bytes);
    for (size_t i = 0; i < block.size(); ++i) block[i] = static_cast<char>(i * 31 + 1);
    // The block's checksum is computed once, as a host tier stores it when the block is
    // written (BlockManager::FinishWrite), and travels with every put: the sender does
    // not hash at put time; the worker still verifies every put's bytes against it.
    // SY_TRANSPORT_BENCH_SENDER_HASH=1 hashes at every put instead (A/B runs).
    std::optional<uint64_t> checksum = ChecksumOf(block.data(), bytes);
    if (std::getenv("SY_TRANSPORT_BENCH_SENDER_HASH") != nullptr) checksum.reset();
    const auto bench_start = std::chrono::steady_clock::now();
    uint64_t n = 0;
    auto post = [&]() -> Result<PendingPut> {
      PutRequest req;
      req.workflow_id = "bench";
      req.context_id = "ctx";
      req.model_epoch = client->model_epoch();
      req.generation = n + 1;
      req.blocks.push_back({1 + n % (2 * window), block.data(), bytes, checksum});
      ++n;
      return client->PostPut(req);
    };
    auto finish = [&](PendingPut& p) -> Status {
      SY_ASSIGN_OR_RETURN(TransferEvents ev, p.Wait());
      if (!ev.committed) return Status::Internal("put not committed: " + ev.message);
      if (std::getenv("SY_TRANSPORT_BENCH_VERBOSE") != nullptr) {
        auto ms = [&](auto t) { return Seconds(t - bench_start) * 1e3; };
        std::fprintf(stderr, "put %llu B: posted %.2f ms, sent %.2f ms, acked %.2f ms\n",
                     static_cast<unsigned long long>(bytes), ms(ev.posted_at),
                     ms(ev.transport_complete_at), ms(ev.acked_at));
      }
      return Status::OK();
    };
    // `count` puts with Window() in flight.
    auto run = [&](int count) -> Status {
      std::deque<PendingPut> inflight;
      for (int i = 0; i < count; ++i) {
        if (static_cast<int>(inflight.size()) == window) {
          SY_RETURN_IF_ERROR(finish(inflight.front()));
          inflight.pop_front();
        }
        SY_ASSIGN_OR_RETURN(PendingPut p, post());
        inflight.push_back(std::move(p));
      }
      while (!inflight.empty()) {
        SY_RETURN_IF_ERROR(finish(inflight.front()));
        inflight.pop_front();
      }
      return Status::OK();
    };
    // Warm-up, the same pattern: every block id committed, then twice over, so the worker
    // holds a recycled staging buffer for each put in flight when the timed puts start.
    SY_RETURN_IF_ERROR(run(4 * window));
    const int iters = Iterations(bytes);
    auto t0 = std::chrono::steady_clock::now();
    SY_RETURN_IF_ERROR(run(iters));
    return bytes * iters / Seconds(std::chrono::steady_clock::now() - t0) / kMiB;
  }();
  worker->Stop();
  serve.join();
  return out;
}

std::string SizeName(uint64_t bytes) {
  return bytes >= (1u << 20) ? std::to_string(bytes >> 20) + "MiB"
                             : std::to_string(bytes >> 10) + "KiB";
}

// SY_TRANSPORT_BENCH_QUICK=1: the figures of one path (SY_TRANSPORT_BENCH_TLS, default
// tcp) and size (SY_TRANSPORT_BENCH_SIZE, "1" or "64" MiB; default both) without
// ucx_perftest, median of kTransportTrials each, printed to stderr (for profiling and tuning the
// transport; no results are reported). SY_TRANSPORT_BENCH_VERBOSE=1 adds each put's times;
// SY_TRANSPORT_BENCH_CONNECT picks the ucx transport's connection flow (param "connect").
bool QuickRun() {
  const char* q = std::getenv("SY_TRANSPORT_BENCH_QUICK");
  if (q == nullptr || *q != '1') return false;
  const char* tls = std::getenv("SY_TRANSPORT_BENCH_TLS");
  std::string t = tls ? tls : "tcp";
  auto e = Connect(t);
  if (!e.ok()) {
    std::fprintf(stderr, "quick: %s\n", e.status().ToString().c_str());
    return true;
  }
  auto value = [](const Result<double>& r) {
    return r.ok() ? std::optional<double>(*r) : std::nullopt;
  };
  for (uint64_t bytes : {uint64_t{1} << 20, uint64_t{64} << 20}) {
    const char* only = std::getenv("SY_TRANSPORT_BENCH_SIZE");  // "1" or "64" (MiB)
    if (only != nullptr && std::to_string(bytes >> 20) != only) continue;
    const char* what = std::getenv("SY_TRANSPORT_BENCH_WHAT");  // "tag" or "put" (default both)
    std::optional<double> tag, cold, put;
    if (what == nullptr || std::string(what) != "put") {
      tag = Median([&] { return value(TagBandwidth(*e, bytes)); });
      cold = Median([&] { return value(TagBandwidth(*e, bytes, PutWorkingSet(bytes))); });
    }
    if (what == nullptr || std::string(what) != "tag") {
      put = Median([&] { return value(PeerPutBandwidth(t, bytes)); });
    }
    std::fprintf(stderr, "quick %s %s: tag %.1f MB/s (cold destinations %.1f), put %.1f MB/s\n",
                 t.c_str(), SizeName(bytes).c_str(), tag.value_or(-1.0), cold.value_or(-1.0),
                 put.value_or(-1.0));
  }
  auto lat = Median([&] { return value(PingPongHalfRttUs(*e, 8192)); });
  std::fprintf(stderr, "quick %s 8KiB latency: %.1f us\n", t.c_str(), lat.value_or(-1.0));
  return true;
}

// Raw tags into PutWorkingSet() rotating buffers, and the put against them.
void ReportColdDestinations(Endpoints& e, const std::string& path, uint64_t bytes,
                            std::optional<double> tag, std::optional<double> put,
                            bench::Report* report) {
  const int ndst = PutWorkingSet(bytes);
  auto cold = Median([&]() -> std::optional<double> {
    auto r = TagBandwidth(e, bytes, ndst);
    return r.ok() ? std::optional<double>(*r) : std::nullopt;
  });
  if (!cold) return;
  const std::string name = path + "_" + SizeName(bytes);
  const std::string note = "Transport PostSend/PostRecv, " + std::to_string(Window(bytes)) +
                           " messages in flight, receives into " + std::to_string(ndst) +
                           " rotating buffers (the put worker's working set)";
  report->Add({"transport_tag_bw_" + name + "_cold_destinations", *cold, "MB/s", true,
               tag ? "transport_tag_bw_" + name : "", tag, note});
  if (put) {
    report->Add({"peer_put_" + name + "_vs_tag_same_working_set", *put, "MB/s", true,
                 "transport_tag_bw_" + name + "_cold_destinations", cold,
                 "the put against raw tags with the same destination working set"});
  }
}

void ReportTransport(const std::map<std::string, bench::Measured>&, bench::Report* report) {
  if (QuickRun()) return;
  const std::pair<const char*, const char*> kPaths[] = {{"tcp", "tcp"}, {"shm", "sm,self"}};
  for (const auto& [path, tls_name] : kPaths) {
    const char* tls = tls_name;  // a lambda may not capture a structured binding in clang 14
    auto endpoints = Connect(tls);
    if (!endpoints.ok()) {
      std::fprintf(stderr, "transport bench: %s: %s\n", path,
                   endpoints.status().ToString().c_str());
      continue;
    }
    for (uint64_t bytes : {uint64_t{1} << 20, uint64_t{64} << 20}) {
      const int iters = Iterations(bytes);
      auto perf = Median([&] { return Perftest(tls, "tag_bw", bytes, iters, 4); });
      // Our TCP endpoints detect a failed peer (UCP_ERR_HANDLING_MODE_PEER; a put to a
      // dead worker must fail, not hang). UCX then chooses other protocols (no zero-copy
      // rendezvous over TCP): ucx_perftest -e sets the same mode on its endpoints, so it
      // is the like-for-like baseline; the one without it is reported beside it.
      std::optional<double> perf_e;
      if (Config(tls).params.count("err_mode") == 0) {
        perf_e = Median([&] { return Perftest(tls, "tag_bw", bytes, iters, 4, "-e"); });
      }
      auto tag = Median([&]() -> std::optional<double> {
        auto r = TagBandwidth(*endpoints, bytes);
        if (!r.ok()) std::fprintf(stderr, "tag bw: %s\n", r.status().ToString().c_str());
        return r.ok() ? std::optional<double>(*r) : std::nullopt;
      });
      auto put = Median([&]() -> std::optional<double> {
        auto r = PeerPutBandwidth(tls, bytes);
        if (!r.ok()) std::fprintf(stderr, "peer put: %s\n", r.status().ToString().c_str());
        return r.ok() ? std::optional<double>(*r) : std::nullopt;
      });
      const std::string size = SizeName(bytes);
      const std::string plain = perf ? "ucx_perftest tag_bw" : "";
      const std::string same =
          perf_e ? "ucx_perftest tag_bw -e (peer error handling, as ours)" : plain;
      const std::optional<double> like = perf_e ? perf_e : perf;
      const std::string put_note =
          "KvStoreClient put to KvStoreServer incl. checksum, validation, "
          "commit, ack; " +
          std::to_string(Window(bytes)) + " puts in flight";
      if (put) {
        report->Add({"peer_put_" + std::string(path) + "_" + size, *put, "MB/s", true, same, like,
                     put_note});
        if (perf_e) {
          report->Add({"peer_put_" + std::string(path) + "_" + size + "_vs_no_error_handling", *put,
                       "MB/s", true, plain, perf,
                       put_note + "; baseline without peer error handling"});
        }
      }
      if (tag) {
        report->Add({"transport_tag_bw_" + std::string(path) + "_" + size, *tag, "MB/s", true, same,
                     like,
                     "Transport PostSend/PostRecv, " + std::to_string(Window(bytes)) +
                         " messages in flight"});
      }
      // At 1 MiB ucx_perftest's one buffer per side stays in cache, while a worker writes
      // each put to a buffer last touched 3 * Window() MiB earlier. Raw tags into that many
      // rotating buffers separate the cost of cold destination memory from the protocol's.
      if (bytes < (64u << 20)) ReportColdDestinations(*endpoints, path, bytes, tag, put, report);
    }
    auto lat = Median([&]() -> std::optional<double> {
      auto r = PingPongHalfRttUs(*endpoints, 8192);
      return r.ok() ? std::optional<double>(*r) : std::nullopt;
    });
    auto perf_lat = Median([&] { return Perftest(tls, "tag_lat", 8192, 2000, 1); });
    if (lat) {
      report->Add({"transport_latency_" + std::string(path) + "_8KiB", *lat, "us", false,
                   perf_lat ? "ucx_perftest tag_lat" : "", perf_lat,
                   "half round trip, P50 of 350"});
    }
  }
}

}  // namespace

SY_BENCH_REPORT(net_budget_transport, ReportTransport);

}  // namespace switchyard::kv_store
