// Direct worker-to-worker puts with real `switchyard worker --join` processes (the binary
// under SY_BINARY_DIR) on loopback, through serve's own wiring (JoinRemoteWorkers: each
// worker's KV store as a KvStoreTier, the DirectPutMover ahead of the relay, put
// orders over the control connections): a BlockManager here moves a block from worker
// A's store into worker B's. The bytes read back from B intact while serve's own transport
// moved none of them, and B's counters show the put; a worker started with --direct-puts
// off is relayed instead; SIGKILL of the destination or of the source while the put waits
// at B fails the move, nothing is committed at serve or left at B, and the source block
// stays readable where it was. And the orderer's teardown: closed, it drops its orders
// without their callbacks.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "kv_tiers/arena_tier.h"
#include "kv_tiers/block_manager.h"
#include "kv_tiers/remote/kv_store_tier.h"
#include "serve/serve_join.h"
#include "tests/kv_tiers/test_util.h"
#include "tests/workers/processes.h"
#include "workers/put_orders.h"

namespace switchyard::workers {
namespace {

constexpr uint64_t kBlock = 4096;  // SmallLayout's block

using testing::WaitUntil;

// Serve's side: the joined workers' stores as tiers and serve's movers for them, a host
// tier, and a BlockManager on a virtual loop drained at its current time (so the direct
// mover's watchdog timers never fire here).
class DirectCluster {
 public:
  ~DirectCluster() {
    if (join_) join_->Detach();  // serve's teardown: no order's callback after this
    mgr_.reset();
    tiers_.clear();
    join_.reset();  // its bye ends the workers that are left
    for (auto& [id, pid] : pids_) testing::Reap(pid, 30);
  }
  // Two workers, w0 (A, the source) and w1 (B); `args[id]` adds to a worker's command.
  bool Start(std::map<std::string, std::vector<std::string>> args = {}) {
    dir_ = ::testing::TempDir() + "/sy_direct_" + std::to_string(::getpid());
    std::filesystem::create_directories(dir_);
    serve::ServeJoinOptions jo;
    jo.local_workers = 0;
    jo.remote_workers = 2;
    jo.join_timeout = Seconds(120);
    jo.heartbeat = Millis(200);
    jo.heartbeat_misses = 10;  // the loaded VM: lost by a closed connection, not silence
    jo.listening = [&](const std::string& address) {
      for (const char* id : {"w0", "w1"}) {
        std::vector<std::string> a = {testing::Binary(), "worker",    "--join", address,
                                      "--engine",        "simulated", "--id",   id};
        a.insert(a.end(), args[id].begin(), args[id].end());
        pids_[id] = testing::Spawn(a, dir_ + "/" + id + ".log");
      }
    };
    auto join = serve::JoinRemoteWorkers(jo, &config_);
    EXPECT_TRUE(join.ok()) << join.status();
    if (!join.ok()) return false;
    join_ = std::move(*join);
    for (size_t i = 0; i < join_->size(); ++i) index_[join_->worker(i)->hello().worker_id()] = i;
    kv_tiers::TierOptions to = kv_tiers::testing::Opts(16, kBlock);
    for (int w = 0; w < 2; ++w) {
      auto t = config_.hbm_tier_factory(w, to);
      EXPECT_TRUE(t.ok() && *t) << t.status();
      if (!t.ok() || !*t) return false;
      tiers_.push_back(std::move(*t));
    }
    host_ = kv_tiers::testing::MakeTier("host", kv_tiers::testing::Opts(16, kBlock));
    kv_tiers::MoverEnv env;
    env.loop = &loop_;
    kv_tiers::MoverSet movers = kv_tiers::testing::HostAndPeerMovers(env);
    config_.add_movers(env, &movers);
    kv_tiers::BlockManagerOptions bo;
    bo.reclaim_on_high_watermark = false;
    mgr_ = std::make_unique<kv_tiers::BlockManager>(kv_tiers::testing::SmallLayout(), &loop_,
                                                    std::move(movers), nullptr, bo);
    bool ok = mgr_->AddTier(host_.get()).ok();
    for (auto& t : tiers_) ok = ok && mgr_->AddTier(t.get()).ok();
    return ok;
  }
  // Worker `id`'s store (its tier) and scheduler index.
  kv_tiers::Tier* Store(const std::string& id) { return tiers_.at(index_.at(id)).get(); }
  auto* Remote(const std::string& id) {
    return static_cast<kv_tiers::remote::KvStoreTier*>(Store(id));
  }
  // A committed block of `data` in `id`'s store (serve's fill: host tier, then the peer mover).
  BlockId In(const std::string& id, const std::vector<char>& data) {
    kv_tiers::BlockSpec spec{"t", "wf", "ctx", 0, 0, 16, 0};
    BlockId b = mgr_->Allocate(spec, "host").value();
    EXPECT_TRUE(mgr_->BeginWrite(b).ok());
    EXPECT_TRUE(mgr_->WriteBytes(b, data.data(), data.size()).ok());
    EXPECT_TRUE(mgr_->FinishWrite(b).ok());
    EXPECT_TRUE(mgr_->Commit(b).ok());
    kv_tiers::TransferRecord r = Await(Move(b, id));
    EXPECT_EQ(r.state, v1::COMMITTED) << r.status;
    return r.destination;
  }
  TransferId Move(BlockId b, const std::string& to_id) {
    auto t = mgr_->Move(b, Store(to_id)->name(), kv_tiers::MoveOptions{}, /*demote=*/true);
    EXPECT_TRUE(t.ok()) << t.status();
    return t.value_or(TransferId{0});
  }
  bool Ended(TransferId t) {
    loop_.RunUntil(loop_.Now());
    return kv_tiers::testing::TransferEnded(*mgr_, t);
  }
  kv_tiers::TransferRecord Await(TransferId t) {
    EXPECT_TRUE(WaitUntil([&] { return Ended(t); }));
    return mgr_->Transfer(t).value();
  }
  std::vector<char> ReadBack(BlockId b) {
    return kv_tiers::testing::ReadBytes(*mgr_, b, {"t", "wf", "ctx", mgr_->model_epoch(), 1},
                                        kBlock);
  }
  // Worker `id` as serve lists it (its store's figures come with its heartbeats).
  v1::JoinedWorker Listed(const std::string& id) {
    v1::ClusterState c;
    config_.fill_cluster(&c);
    for (const auto& w : c.joined_workers())
      if (w.id() == id) return w;
    return {};
  }
  void Kill(const std::string& id) {
    ASSERT_EQ(::kill(pids_.at(id), SIGKILL), 0);
    testing::Reap(pids_.at(id), 30);
    pids_.erase(id);
  }
  kv_tiers::BlockManager& mgr() { return *mgr_; }

 private:
  std::string dir_;
  driver::SchedulerConfig config_;
  std::unique_ptr<JoinServer> join_;
  std::map<std::string, size_t> index_;
  std::map<std::string, pid_t> pids_;
  std::vector<std::unique_ptr<kv_tiers::Tier>> tiers_;
  std::unique_ptr<kv_tiers::Tier> host_;
  VirtualEventLoop loop_;
  std::unique_ptr<kv_tiers::BlockManager> mgr_;
};

TEST(DirectPuts, ABlockMovesFromOneWorkersStoreIntoAnothersWithoutServe) {
  SKIP_WITHOUT_BINARY();
  DirectCluster c;
  ASSERT_TRUE(c.Start());
  EXPECT_TRUE(c.Listed("w0").direct_puts());
  auto data = kv_tiers::testing::Pattern(kBlock, 21);
  BlockId in_a = c.In("w0", data);
  kv_tiers::TransferRecord r = c.Await(c.Move(in_a, "w1"));
  ASSERT_EQ(r.state, v1::COMMITTED) << r.status;
  EXPECT_TRUE(r.transport_completed_at && r.validated_at && r.committed_at);
  // Serve's own transport moved none of it (the relay gets from A and puts into B).
  EXPECT_EQ(c.Remote("w0")->gets_posted(), 0u);
  EXPECT_EQ(c.Remote("w1")->puts_posted(), 0u);
  EXPECT_EQ(c.Listed("w0").direct_orders(), 1u);
  // End to end: B's copy reads back intact (a validated get from B's store).
  EXPECT_EQ(c.ReadBack(r.destination), data);
  EXPECT_EQ(c.Remote("w0")->used_bytes(), 0u);  // demoted: freed at A after the commit
  // The stores' figures (heartbeats): B committed the put A sent.
  ASSERT_TRUE(WaitUntil([&] { return c.Listed("w0").kv().direct_puts_committed() == 1; }))
      << c.Listed("w0").DebugString();
  EXPECT_EQ(c.Listed("w0").kv().direct_put_bytes(), kBlock);
  // B's figures come with B's own heartbeats, which may lag A's.
  ASSERT_TRUE(WaitUntil([&] { return c.Listed("w1").kv().puts_committed() >= 1; }))
      << c.Listed("w1").DebugString();
  v1::WorkerKvStats b = c.Listed("w1").kv();
  EXPECT_EQ(b.puts_refused_credit(), 0u);
  EXPECT_EQ(c.Listed("w1").serve_puts(), 0u);
}

TEST(DirectPuts, AWorkerThatTakesNoPutOrdersIsRelayed) {
  SKIP_WITHOUT_BINARY();
  DirectCluster c;
  ASSERT_TRUE(c.Start({{"w0", {"--direct-puts", "off"}}}));
  EXPECT_FALSE(c.Listed("w0").direct_puts());
  auto data = kv_tiers::testing::Pattern(kBlock, 22);
  kv_tiers::TransferRecord r = c.Await(c.Move(c.In("w0", data), "w1"));
  ASSERT_EQ(r.state, v1::COMMITTED) << r.status;
  EXPECT_EQ(c.Remote("w0")->gets_posted(), 1u);
  EXPECT_EQ(c.Remote("w1")->puts_posted(), 1u);
  EXPECT_EQ(c.Listed("w0").direct_orders(), 0u);
  EXPECT_EQ(c.ReadBack(r.destination), data);
}

// A put that waits at B (each put B takes waits 1.5 s before its commit) when one worker
// is SIGKILLed: the move fails, serve commits nothing, the source block is still
// committed and reads back from A's store (unless A is the one killed), and B holds
// nothing of it.
void KillMidMove(const std::string& victim) {
  DirectCluster c;
  ASSERT_TRUE(c.Start({{"w1", {"--kv-finish-delay-ms", "1500"}}}));
  auto data = kv_tiers::testing::Pattern(kBlock, 23);
  BlockId in_a = c.In("w0", data);
  const uint64_t committed_at_b = c.Listed("w1").kv().puts_committed();
  TransferId t = c.Move(in_a, "w1");
  // B has taken the put (its credit is in use) and waits before committing it.
  ASSERT_TRUE(WaitUntil([&] { return c.Listed("w1").kv().credit_in_use_bytes() > 0; }))
      << c.Listed("w1").DebugString();
  ASSERT_FALSE(c.Ended(t));
  c.Kill(victim);
  kv_tiers::TransferRecord r = c.Await(t);
  EXPECT_EQ(r.state, v1::FAILED) << r.status;
  EXPECT_FALSE(r.committed_at);
  EXPECT_TRUE(r.status.IsUnavailable()) << r.status;
  EXPECT_EQ(c.Remote("w1")->used_bytes(), 0u) << "serve kept the failed destination";
  EXPECT_EQ(c.mgr().State(in_a).value(), v1::BLOCK_COMMITTED);
  if (victim == "w1") {
    EXPECT_EQ(c.ReadBack(in_a), data) << "the source is readable where it was";
    return;
  }
  // A died: B dropped the put instead of committing it (its sender can never learn the
  // outcome). B's figures once the put ended there (its credit back in a heartbeat; a
  // commit is counted before the credit returns) show no new commit.
  v1::JoinedWorker b;
  ASSERT_TRUE(WaitUntil([&] {
    b = c.Listed("w1");
    return b.kv().credit_in_use_bytes() == 0;
  })) << b.DebugString();
  EXPECT_EQ(b.kv().puts_committed(), committed_at_b) << b.DebugString();
}

TEST(DirectPuts, SigkillOfTheDestinationMidMoveFailsItAndKeepsTheSource) {
  SKIP_WITHOUT_BINARY();
  KillMidMove("w1");
}

TEST(DirectPuts, SigkillOfTheSourceMidMoveCommitsNothingAtTheDestination) {
  SKIP_WITHOUT_BINARY();
  KillMidMove("w0");
}

// Serve's teardown (JoinServer::Detach's hook): Close drops the orders still out without
// their callbacks (they would reach the destroyed loop and tiers), so the bye that follows
// (a loss to the orderer) ends nothing; later orders are refused, late reports ignored.
// Close ends the orders still out at once (their moves fail while the service lives: a
// BlockManager would otherwise wait for them forever), and nothing reaches a callback after.
TEST(DirectPuts, ClosingTheOrdererEndsItsOrdersThenRunsNoCallback) {
  int a[2], b[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, a), 0);
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, b), 0);
  auto worker = [](int fd, const std::string& id, int index) {
    v1::WorkerHello h;
    h.set_worker_id(id);
    h.set_kv_direct_puts(true);
    return std::make_unique<RemoteWorker>(std::make_unique<ControlConn>(fd, id), h, index);
  };
  std::unique_ptr<RemoteWorker> wa = worker(a[0], "a", 0), wb = worker(b[0], "b", 1);
  namespace kv_store = kv_store;
  kv_tiers::remote::KvStoreTierOptions ro;
  auto ta = kv_tiers::remote::KvStoreTier::Detached(kv_tiers::testing::Opts(16, kBlock), ro);
  auto tb = kv_tiers::remote::KvStoreTier::Detached(kv_tiers::testing::Opts(16, kBlock), ro);
  auto orderer = std::make_shared<ControlPutOrderer>();
  orderer->AddStore(ta.get(), wa.get());
  orderer->AddStore(tb.get(), wb.get());
  ControlPutOrderer::Attach(orderer, wa.get());
  ControlPutOrderer::Attach(orderer, wb.get());
  std::atomic<int> done{0};
  Status last;
  auto order = [&](uint64_t id) {
    kv_store::DirectPutOrder o;
    o.order_id = id;
    return orderer->Order(*ta, *tb, o, [&](kv_store::DirectPutOutcome out) {
      last = out.status;
      ++done;
    });
  };
  ASSERT_TRUE(order(1).ok());
  orderer->OnLost(1, Status::Unavailable("gone"));  // before Close: the order ends
  EXPECT_EQ(done.load(), 1);
  ASSERT_TRUE(order(2).ok());
  orderer->Close();
  EXPECT_EQ(done.load(), 2) << "Close ends the order still out";
  EXPECT_EQ(last.code(), StatusCode::kAborted) << last;
  EXPECT_NE(last.message().find("serve is stopping"), std::string::npos) << last;
  wa->Shutdown("serve stopping");  // its kv sink's loss: ignored now
  wb->Shutdown("serve stopping");
  v1::PutBlocksDone late;
  late.set_order_id(2);
  orderer->OnDone(0, late);
  EXPECT_FALSE(orderer->Abandon(2, Status::DeadlineExceeded("late")));
  EXPECT_EQ(done.load(), 2) << "no callback after Close";
  Status st = order(3);
  EXPECT_TRUE(st.IsUnavailable()) << st;
  EXPECT_NE(st.message().find("serve is stopping"), std::string::npos) << st;
  EXPECT_EQ(done.load(), 2);
  wa.reset();
  wb.reset();
  ::close(a[1]);
  ::close(b[1]);
}

}  // namespace
}  // namespace switchyard::workers
