// Receiver-granted credit under incast (docs/design.md invariant 7): four KvStoreClients put
// 1 MiB blocks at once into one KvStoreServer over TCP loopback (UCX_TLS=tcp), each keeping
// as many puts in flight as its credit allows. Subject: the worker grants 2 MiB per sender
// and 4 MiB in total (half of what the senders could hold together), so puts over the
// total are refused and retried by their sender. Baseline: the same puts with credit far
// above what is in flight (64 MiB per sender, 2 GiB in total: no put is refused), in the
// same run. Reported: aggregate MB/s (MB = 2^20 B), median of kTrials runs each; the note
// gives the refusals and the receiver's highest accepted-not-committed bytes.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <deque>
#include <string>
#include <thread>
#include <vector>

#include "bench/common/report.h"
#include "kv_store/kv_store_client.h"
#include "kv_store/kv_store_server.h"

namespace switchyard::kv_store {
namespace {

using bench::kMiB;

constexpr int kTrials = 3;
constexpr int kSenders = 4;
constexpr int kPutsPerSender = 64;
constexpr uint64_t kBlock = 1ull << 20;

struct Run {
  double mb_per_s = 0;
  uint64_t refused = 0;
  uint64_t max_in_use = 0;
};

transport::TransportConfig Tcp() {
  transport::TransportConfig c;
  c.params["TLS"] = "tcp";
  return c;
}

// One sender's puts: post while credit lasts, else finish the oldest; a put the worker
// refused for credit goes back in the queue.
Status SendAll(KvStoreClient& c, int sender, const std::vector<char>& block, uint64_t checksum) {
  std::deque<int> todo;
  for (int i = 0; i < kPutsPerSender; ++i) todo.push_back(i);
  std::deque<std::pair<int, PendingPut>> pending;
  auto finish_oldest = [&]() -> Status {
    auto [i, p] = std::move(pending.front());
    pending.pop_front();
    SY_ASSIGN_OR_RETURN(TransferEvents ev, p.Wait());
    if (ev.committed) return Status::OK();
    if (ev.reason != RejectReason::kCredit) return Status::Internal("put rejected: " + ev.message);
    todo.push_back(i);
    return Status::OK();
  };
  while (!todo.empty() || !pending.empty()) {
    if (todo.empty()) {
      SY_RETURN_IF_ERROR(finish_oldest());
      continue;
    }
    PutRequest r{"bench_" + std::to_string(sender), "ctx", c.model_epoch(), 1, {}};
    r.blocks.push_back(
        {static_cast<uint64_t>(sender * 1000 + todo.front()), block.data(), kBlock, checksum});
    auto p = c.PostPut(r);
    if (p.ok()) {
      pending.emplace_back(todo.front(), std::move(*p));
      todo.pop_front();
    } else if (p.status().IsResourceExhausted() && !pending.empty()) {
      SY_RETURN_IF_ERROR(finish_oldest());
    } else {
      return p.status();
    }
  }
  return Status::OK();
}

Result<Run> Incast(uint64_t per_sender, uint64_t total) {
  KvStoreServerOptions wo;
  wo.transport_config = Tcp();
  wo.capacity_bytes = (kSenders * kPutsPerSender + 8) * kBlock;  // every put its own block
  wo.max_inflight_bytes = per_sender;
  wo.total_inflight_bytes = total;
  SY_ASSIGN_OR_RETURN(auto worker, KvStoreServer::Start(wo));
  std::thread serve([&] { worker->Run(); });
  Result<Run> out = [&]() -> Result<Run> {
    std::vector<std::unique_ptr<KvStoreClient>> clients;
    KvStoreClientOptions co;
    co.transport_config = Tcp();
    for (int s = 0; s < kSenders; ++s) {
      SY_ASSIGN_OR_RETURN(auto c, KvStoreClient::Connect(worker->address(), co));
      clients.push_back(std::move(c));
    }
    std::vector<char> block(kBlock);
    for (size_t i = 0; i < block.size(); ++i) block[i] = static_cast<char>(i * 31 + 1);
    const uint64_t checksum = ChecksumOf(block.data(), kBlock);
    std::vector<Status> status(kSenders);
    auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> threads;
    for (int s = 0; s < kSenders; ++s) {
      threads.emplace_back([&, s] { status[s] = SendAll(*clients[s], s, block, checksum); });
    }
    for (auto& t : threads) t.join();
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (const Status& s : status) SY_RETURN_IF_ERROR(s);
    KvStoreServerStats st = worker->stats();
    return Run{kSenders * kPutsPerSender * kBlock / secs / kMiB, st.puts_refused_credit,
               st.max_credit_in_use_bytes};
  }();
  worker->Stop();
  serve.join();
  return out;
}

std::optional<Run> MedianIncast(uint64_t per_sender, uint64_t total) {
  std::vector<Run> runs;
  for (int i = 0; i < kTrials; ++i) {
    auto r = Incast(per_sender, total);
    if (!r.ok()) {
      std::fprintf(stderr, "credit bench: %s\n", r.status().ToString().c_str());
      return std::nullopt;
    }
    runs.push_back(*r);
  }
  std::sort(runs.begin(), runs.end(),
            [](const Run& a, const Run& b) { return a.mb_per_s < b.mb_per_s; });
  return runs[runs.size() / 2];
}

void ReportCredit(const std::map<std::string, bench::Measured>&, bench::Report* report) {
  auto limited = MedianIncast(2 * kBlock, 4 * kBlock);
  auto unlimited = MedianIncast(64 * kBlock, 2048 * kBlock);
  if (!limited) return;
  report->Add({"peer_put_incast_4x1MiB_credit_4MiB", limited->mb_per_s, "MB/s", true,
               unlimited ? "same puts, credit 64 MiB/sender, 2 GiB total" : "",
               unlimited ? std::optional<double>(unlimited->mb_per_s) : std::nullopt,
               "4 senders, receiver credit 2 MiB/sender 4 MiB total; " +
                   std::to_string(limited->refused) + " puts refused and retried; max " +
                   std::to_string(limited->max_in_use) + " B accepted-not-committed" +
                   (unlimited ? " (baseline max " + std::to_string(unlimited->max_in_use) + " B)"
                              : std::string())});
}

}  // namespace

SY_BENCH_REPORT(net_budget_credit, ReportCredit);

}  // namespace switchyard::kv_store
