// Group commit: the store's one committer thread writes every queued record in one
// WriteBatch and completes them in queue order; the service acknowledges a mutation only
// once its record is durable, in each workflow's order; readers of a workflow with
// records not yet durable are answered after them; the HTTP layer answers 503 past its
// bound on requests admitted but not yet answered (those waiting for a commit included).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <future>
#include <thread>

#include "base/mutex.h"
#include "http/http_server.h"
#include "proto/json.h"
#include "serve/http_api.h"
#include "service/store.h"
#include "tests/common/wait_until.h"
#include "tests/http/http_test_client.h"

namespace switchyard::service {
namespace {

std::string TempDir(const std::string& name) {
  std::string dir = ::testing::TempDir() + "/sy_gc_" + name + "_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  return dir;
}

v1::WorkflowLogRecord Rec(int i) {
  v1::WorkflowLogRecord r;
  r.set_time_ms(i);
  r.set_cancelled("r" + std::to_string(i));
  return r;
}

// Holds the committer thread inside a `done` callback until released: everything queued
// meanwhile waits for the next group commit.
struct Gate {
  std::promise<void> entered, release;
  std::shared_future<void> released{release.get_future().share()};
  Store::Done Hold() {
    return [this](const Status&) {
      entered.set_value();
      released.wait();
    };
  }
};

TEST(StoreGroupCommit, CompletesInQueueOrderInFewerBatchesAndDurably) {
  std::string dir = TempDir("store");
  {
    auto store = Store::Open(dir, /*sync=*/true);
    ASSERT_TRUE(store.ok()) << store.status();
    Gate gate;
    ASSERT_TRUE((*store)->Enqueue("w0", 0, Rec(0), gate.Hold()).ok());
    gate.entered.get_future().wait();  // the committer is held: the next ones queue up
    constexpr int kThreads = 4, kPerThread = 50;
    Mutex mu;
    std::vector<std::pair<int, int>> done;  // (thread, i) in completion order
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < kPerThread; ++i) {
          MutexLock lock(&mu);  // enqueue order = seq order per workflow
          ASSERT_TRUE((*store)
                          ->Enqueue("w" + std::to_string(t + 1), uint64_t(i), Rec(i),
                                    [&, t, i](const Status& s) {
                                      EXPECT_TRUE(s.ok()) << s;
                                      done.emplace_back(t, i);  // committer thread only
                                    })
                          .ok());
        }
      });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ((*store)->stats().queued, size_t(kThreads * kPerThread));
    gate.release.set_value();
    ASSERT_TRUE((*store)->Flush().ok());
    ASSERT_EQ(done.size(), size_t(kThreads * kPerThread));
    std::vector<int> next(kThreads, 0);
    for (auto [t, i] : done) EXPECT_EQ(i, next[size_t(t)]++) << "workflow w" << t + 1;
    auto st = (*store)->stats();
    EXPECT_EQ(st.records, uint64_t(1 + kThreads * kPerThread));
    EXPECT_LE(st.batches, 3u) << "the queued records share one write";
    EXPECT_EQ(st.max_batch, uint64_t(kThreads * kPerThread));
    // Every record and every commit lands in exactly one latency bucket.
    uint64_t in_record_buckets = 0, in_commit_buckets = 0;
    for (uint64_t n : st.record_ms) in_record_buckets += n;
    for (uint64_t n : st.commit_ms) in_commit_buckets += n;
    EXPECT_EQ(in_record_buckets, st.records);
    EXPECT_EQ(in_commit_buckets, st.batches);
  }
  auto reopened = Store::Open(dir, true);
  ASSERT_TRUE(reopened.ok());
  int records = 0;
  ASSERT_TRUE((*reopened)
                  ->ForEachRecord([&](const std::string&, uint64_t, const v1::WorkflowLogRecord&) {
                    ++records;
                    return Status::OK();
                  })
                  .ok());
  EXPECT_EQ(records, 1 + 4 * 50);
  reopened->reset();
  std::filesystem::remove_all(dir);
}

// Under concurrent load (the last commit carried kDelaySiblings records or more), the next
// commit starts no sooner than the delay after it: what arrives meanwhile goes in one batch.
TEST(StoreGroupCommit, CommitDelayGathersConcurrentRecords) {
  std::string dir = TempDir("delay");
  constexpr auto kDelay = std::chrono::milliseconds(300);
  auto store = Store::Open(dir, /*sync=*/false, 0, kDelay);
  ASSERT_TRUE(store.ok()) << store.status();
  Gate gate;
  auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE((*store)->Enqueue("w", 0, Rec(0), gate.Hold()).ok());
  gate.entered.get_future().wait();  // records 1..5 queue behind the held commit
  for (int i = 1; i <= 5; ++i) ASSERT_TRUE((*store)->Enqueue("w", i, Rec(i), nullptr).ok());
  gate.release.set_value();
  ASSERT_TRUE((*store)->Flush().ok());  // the 5 went in one commit, started at once
  uint64_t batches = (*store)->stats().batches;
  for (int i = 6; i <= 8; ++i) ASSERT_TRUE((*store)->Enqueue("w", i, Rec(i), nullptr).ok());
  ASSERT_TRUE((*store)->Flush().ok());
  EXPECT_EQ((*store)->stats().batches, batches + 1) << "records 6..8 and the barrier together";
  EXPECT_EQ((*store)->stats().delayed, 1u);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, kDelay);
  store->reset();
  std::filesystem::remove_all(dir);
}

// A sequential writer (one record per commit) is never delayed: the store counts every
// commit it delays (stats().delayed), and none was.
TEST(StoreGroupCommit, CommitDelaySparesASequentialWriter) {
  std::string dir = TempDir("nodelay");
  constexpr auto kDelay = std::chrono::seconds(5);
  auto store = Store::Open(dir, /*sync=*/false, 0, kDelay);
  ASSERT_TRUE(store.ok()) << store.status();
  for (int i = 0; i < 20; ++i) ASSERT_TRUE((*store)->Append("w", i, Rec(i)).ok());
  EXPECT_EQ((*store)->stats().batches, 20u);
  EXPECT_EQ((*store)->stats().delayed, 0u);
  store->reset();
  std::filesystem::remove_all(dir);
}

TEST(StoreGroupCommit, PendingIdempotencyAnswerIsVisibleAndBarrierWaitsForIt) {
  std::string dir = TempDir("idem");
  auto store = Store::Open(dir, true);
  ASSERT_TRUE(store.ok());
  Gate gate;
  ASSERT_TRUE((*store)->Enqueue("w", 0, Rec(0), gate.Hold()).ok());
  gate.entered.get_future().wait();
  v1::IdempotencyEntry e;
  e.set_status(200);
  e.set_body("first");
  ASSERT_TRUE((*store)->Enqueue("w", 1, Rec(1), nullptr, "t", "key", &e).ok());
  auto seen = (*store)->GetIdempotent("t", "key");
  ASSERT_TRUE(seen.ok() && seen->has_value());
  EXPECT_TRUE((*seen)->pending);
  EXPECT_EQ((*seen)->entry.body(), "first");
  std::atomic<bool> barrier_done{false};
  (*store)->Barrier([&](const Status& s) {
    EXPECT_TRUE(s.ok());
    barrier_done = true;
  });
  EXPECT_FALSE(barrier_done) << "not before the records queued ahead of it";
  gate.release.set_value();
  ASSERT_TRUE((*store)->Flush().ok());
  EXPECT_TRUE(barrier_done);
  seen = (*store)->GetIdempotent("t", "key");
  ASSERT_TRUE(seen.ok() && seen->has_value());
  EXPECT_FALSE((*seen)->pending);
  store->reset();
  std::filesystem::remove_all(dir);
}

// With a retention, compaction drops idempotency answers stored longer ago than it (by
// their time_ms) and keeps newer ones and those from before retention (time_ms 0).
TEST(StoreGroupCommit, CompactionDropsExpiredIdempotencyAnswers) {
  std::string dir = TempDir("idem_ttl");
  auto store = Store::Open(dir, true, /*idem_retention_s=*/60);
  ASSERT_TRUE(store.ok()) << store.status();
  int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  auto put = [&](int seq, const std::string& key, int64_t time_ms) {
    v1::IdempotencyEntry e;
    e.set_status(200);
    e.set_body(key);
    e.set_time_ms(time_ms);
    return (*store)->Append("w", uint64_t(seq), Rec(seq), "t", key, &e);
  };
  ASSERT_TRUE(put(0, "old", now_ms - 61'000).ok());
  ASSERT_TRUE(put(1, "young", now_ms - 30'000).ok());
  ASSERT_TRUE(put(2, "legacy", 0).ok());
  ASSERT_TRUE((*store)->CompactIdempotency().ok());
  EXPECT_FALSE((*store)->GetIdempotent("t", "old")->has_value()) << "expired: dropped";
  EXPECT_TRUE((*store)->GetIdempotent("t", "young")->has_value());
  EXPECT_TRUE((*store)->GetIdempotent("t", "legacy")->has_value());
  store->reset();
  std::filesystem::remove_all(dir);
}

// The log's memtable inserts each record after its workflow's previous one (one insert hint
// per workflow): records of interleaved workflows, with ids that prefix one another, read
// back per workflow and in (id, sequence) order, from the memtable and after a reopen.
TEST(StoreGroupCommit, InterleavedWorkflowsReadBackInSequenceOrder) {
  std::string dir = TempDir("interleaved");
  const std::vector<std::string> ids = {"a", "ab", "a_b", "b", "wf_0123456789abcdef", "a0"};
  constexpr int kPerWorkflow = 40;
  auto check = [&](Store& store) {
    for (const std::string& id : ids) {
      std::vector<uint64_t> seqs;
      ASSERT_TRUE(store
                      .ForEachRecordOf(id,
                                       [&](uint64_t seq, const v1::WorkflowLogRecord& r) {
                                         EXPECT_EQ(r.time_ms(), int64_t(seq)) << id;
                                         seqs.push_back(seq);
                                         return Status::OK();
                                       })
                      .ok());
      ASSERT_EQ(seqs.size(), size_t(kPerWorkflow)) << id;
      for (size_t i = 0; i < seqs.size(); ++i) EXPECT_EQ(seqs[i], i) << id;
    }
    std::vector<std::pair<std::string, uint64_t>> all;
    ASSERT_TRUE(
        store
            .ForEachRecord([&](const std::string& id, uint64_t seq, const v1::WorkflowLogRecord&) {
              all.emplace_back(id, seq);
              return Status::OK();
            })
            .ok());
    ASSERT_EQ(all.size(), ids.size() * kPerWorkflow);
    EXPECT_TRUE(std::is_sorted(all.begin(), all.end())) << "(id, sequence) order";
  };
  {
    auto store = Store::Open(dir, true);
    ASSERT_TRUE(store.ok()) << store.status();
    for (int i = 0; i < kPerWorkflow; ++i) {
      for (const std::string& id : ids) {
        ASSERT_TRUE((*store)->Enqueue(id, uint64_t(i), Rec(i), nullptr).ok());
      }
    }
    ASSERT_TRUE((*store)->Flush().ok());
    check(**store);
  }
  auto reopened = Store::Open(dir, true);
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  check(**reopened);
  reopened->reset();
  std::filesystem::remove_all(dir);
}

// A snapshot is written with the group commit, survives a reopen, is not a log record,
// and is deleted together with the workflow's records.
TEST(StoreGroupCommit, SnapshotsAreStoredAndErasedWithTheirHistory) {
  std::string dir = TempDir("snapshot");
  auto store = Store::Open(dir, true);
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_TRUE((*store)->Append("w", 0, Rec(0)).ok());
  ASSERT_TRUE((*store)->EnqueueSnapshot("w", "final").ok());
  ASSERT_TRUE((*store)->Flush().ok());
  EXPECT_EQ((*store)->GetSnapshot("w")->value_or("none"), "final");
  EXPECT_FALSE((*store)->GetSnapshot("v")->has_value());
  EXPECT_EQ((*store)->stats().records, 1u) << "a snapshot is not a log record";
  store->reset();
  store = Store::Open(dir, true);
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_EQ((*store)->GetSnapshot("w")->value_or("none"), "final") << "durable";
  int records = 0;
  ASSERT_TRUE((*store)
                  ->ForEachRecord([&](const std::string&, uint64_t, const v1::WorkflowLogRecord&) {
                    ++records;
                    return Status::OK();
                  })
                  .ok());
  EXPECT_EQ(records, 1) << "recovery's scan does not see snapshots";
  ASSERT_TRUE((*store)->EnqueueErase("w", 1).ok());
  ASSERT_TRUE((*store)->Flush().ok());
  EXPECT_FALSE((*store)->GetSnapshot("w")->has_value()) << "erased with the history";
  store->reset();
  std::filesystem::remove_all(dir);
}

v1::Workflow Chain(int nodes) {
  v1::Workflow wf;
  wf.set_id("chain");
  for (int i = 0; i < nodes; ++i) {
    auto* n = wf.add_nodes();
    n->set_id("n" + std::to_string(i));
    n->set_kind(v1::TOOL);
    if (i) n->add_deps("n" + std::to_string(i - 1));
  }
  return wf;
}

v1::NodeEvent ChainEvent(int step) {  // 2i: node i starts, 2i+1: it finishes
  v1::NodeEvent e;
  e.set_node_id("n" + std::to_string(step / 2));
  e.set_type(step % 2 ? v1::TOOL_FINISHED : v1::TOOL_STARTED);
  return e;
}

class ServiceGroupCommitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = TempDir(::testing::UnitTest::GetInstance()->current_test_info()->name());
    Open();
  }
  void TearDown() override {
    svc_.reset();
    std::filesystem::remove_all(dir_);
  }
  void Open() {
    svc_.reset();
    ServiceOptions o;
    o.data_dir = dir_;
    o.scheduler.enabled = false;
    auto s = Service::Open(o, RealClock::Default());
    ASSERT_TRUE(s.ok()) << s.status();
    svc_ = std::move(*s);
  }
  // Holds the committer (inside the done of one event) until `gate` is released.
  void HoldCommitter(Gate* gate, int step) {
    svc_->ReportEventAsync("t", "chain", ChainEvent(step), nullptr, [gate](const Status& s) {
      EXPECT_TRUE(s.ok()) << s;
      gate->entered.set_value();
      gate->released.wait();
    });
    gate->entered.get_future().wait();
  }
  std::string dir_;
  std::unique_ptr<Service> svc_;
};

TEST_F(ServiceGroupCommitTest, AcknowledgesInWorkflowOrderOnlyOnceDurable) {
  ASSERT_TRUE(svc_->Submit("t", Chain(20)).ok());
  Gate gate;
  HoldCommitter(&gate, 0);
  Mutex mu;
  std::vector<int> acked;
  for (int step = 1; step < 40; ++step) {
    svc_->ReportEventAsync("t", "chain", ChainEvent(step), nullptr, [&, step](const Status& s) {
      EXPECT_TRUE(s.ok()) << s;
      MutexLock lock(&mu);
      acked.push_back(step);
    });
  }
  // Applied (the next event validated against it) but not acknowledged: not durable yet.
  {
    MutexLock lock(&mu);
    EXPECT_TRUE(acked.empty());
  }
  // A reader of the workflow waits for the records it would show.
  std::promise<Result<v1::WorkflowStatus>> got;
  auto got_f = got.get_future();
  svc_->GetAsync("t", "chain", [&](Result<v1::WorkflowStatus> r) { got.set_value(std::move(r)); });
  // GetAsync answers before it returns or leaves the answer to the store's barrier, which
  // the held committer cannot reach: unanswered now means it waits for the commit.
  EXPECT_EQ(got_f.wait_for(std::chrono::seconds(0)), std::future_status::timeout);
  gate.release.set_value();
  ASSERT_TRUE(svc_->Flush().ok());
  ASSERT_EQ(got_f.wait_for(std::chrono::duration<double>(testing::kWaitSeconds)),
            std::future_status::ready);
  auto st = got_f.get();
  ASSERT_TRUE(st.ok()) << st.status();
  for (const auto& n : st->nodes()) EXPECT_EQ(n.state(), v1::NODE_SUCCEEDED) << n.id();
  std::vector<int> want;
  for (int step = 1; step < 40; ++step) want.push_back(step);
  EXPECT_EQ(acked, want);
  EXPECT_EQ(svc_->counts().events_applied, 40u);
  // All of it survives a restart.
  Open();
  auto again = svc_->Get("t", "chain");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->state(), v1::WORKFLOW_RUNNING);
  for (const auto& n : again->nodes()) EXPECT_EQ(n.state(), v1::NODE_SUCCEEDED) << n.id();
}

TEST_F(ServiceGroupCommitTest, ValidationErrorsAnswerAtOnceWithoutWaitingForTheCommitter) {
  ASSERT_TRUE(svc_->Submit("t", Chain(3)).ok());
  Gate gate;
  HoldCommitter(&gate, 0);
  std::promise<Status> p;
  svc_->ReportEventAsync("t", "chain", ChainEvent(4), nullptr,
                         [&](const Status& s) { p.set_value(s); });
  auto f = p.get_future();
  // Answered while the committer is held: it did not wait for a commit.
  ASSERT_EQ(f.wait_for(std::chrono::duration<double>(testing::kWaitSeconds)),
            std::future_status::ready);
  EXPECT_EQ(f.get().code(), StatusCode::kFailedPrecondition) << "n2 is not ready";
  gate.release.set_value();
  ASSERT_TRUE(svc_->Flush().ok());  // the committer is out of the gate's callback
}

TEST(HttpOverload, Answers503PastTheBoundOnRequestsNotYetAnswered) {
  std::string dir = TempDir("overload");
  ServiceOptions so;
  so.data_dir = dir;
  so.scheduler.enabled = false;
  auto service = std::move(*Service::Open(so, RealClock::Default()));
  v1::ServiceConfig cfg;
  auto* t = cfg.add_tenants();
  t->set_name("t");
  t->set_token("overload-token-0123456789");
  serve::HttpApiOptions ao;
  ao.max_inflight = 2;
  auto api = std::make_unique<serve::HttpApi>(service.get(), *Auth::Create(cfg, dir),
                                              RealClock::Default(), ao);
  http::HttpServerOptions ho;
  ho.port = 0;
  auto server = std::make_unique<http::HttpServer>(
      ho,
      http::HttpServer::AsyncHandler([&](const http::HttpRequest& r, http::HttpServer::Respond d) {
        api->HandleAsync(r, std::move(d));
      }));
  auto port = server->Start();
  ASSERT_TRUE(port.ok());
  std::map<std::string, std::string> auth = {{"Authorization", "Bearer overload-token-0123456789"}};
  ASSERT_EQ(testing::Request(*port, "POST", "/v1/workflows",
                             R"({"id":"chain","nodes":[{"id":"n0","kind":"TOOL"},
                                 {"id":"n1","kind":"TOOL"},{"id":"n2","kind":"TOOL"}]})",
                             auth)
                .status,
            201);
  Gate gate;  // hold the committer: the next mutations wait for their commit
  service->ReportEventAsync("t", "chain", ChainEvent(0), nullptr, [&](const Status&) {
    gate.entered.set_value();
    gate.released.wait();
  });
  gate.entered.get_future().wait();
  std::vector<int> codes(2, 0);
  std::vector<std::thread> waiting;
  for (int i = 0; i < 2; ++i) {
    waiting.emplace_back([&, i] {
      std::string body =
          "{\"nodeId\":\"n" + std::to_string(i + 1) + "\",\"type\":\"TOOL_STARTED\"}";
      codes[size_t(i)] =
          testing::Request(*port, "POST", "/v1/workflows/chain/events", body, auth).status;
    });
  }
  ASSERT_TRUE(testing::WaitUntil([&] { return api->inflight() >= 2; }));
  ASSERT_EQ(api->inflight(), 2) << "two requests wait for their group commit";
  auto over = testing::Request(*port, "GET", "/v1/workflows", "", auth);
  EXPECT_EQ(over.status, 503) << over.body;
  EXPECT_EQ(over.headers["retry-after"], "1");
  EXPECT_EQ(testing::Request(*port, "GET", "/healthz").status, 503) << "the bound covers all";
  gate.release.set_value();
  for (auto& th : waiting) th.join();
  EXPECT_EQ(codes, (std::vector<int>{200, 200}));
  EXPECT_EQ(api->inflight(), 0);
  EXPECT_EQ(testing::Request(*port, "GET", "/v1/workflows/chain", "", auth).status, 200);
  server->Stop();
  ASSERT_TRUE(service->Flush().ok());
  api.reset();
  service.reset();
  server.reset();  // outlives every answer callback it handed out
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace switchyard::service
