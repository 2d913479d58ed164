// One scheduler, two workers in their own processes: an in-process Service whose scheduler
// has no local worker and two `switchyard worker --join` processes (the binary under
// SY_BINARY_DIR) on loopback. Workflows run their LLM nodes on the joined workers; a
// SIGKILLed worker is marked lost and every workflow still ends, with its side-effect tool
// run once. And serve's wiring without processes: a worker lost before the service opens
// does not stop its start.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "kv_tiers/remote/kv_store_tier.h"
#include "proto/json.h"
#include "serve/http_api.h"
#include "serve/serve_join.h"
#include "service/service.h"
#include "tests/cluster/etcd_process.h"
#include "tests/workers/joined_cluster.h"
#include "tests/workers/processes.h"
#include "workers/control_conn.h"

namespace switchyard::workers {
namespace {

TEST(JoinedWorkers, WorkflowsRunTheirLlmNodesOnTwoJoinedWorkers) {
  SKIP_WITHOUT_BINARY();
  JoinedCluster c("joined_run");
  {
    ASSERT_TRUE(c.Start(2));
    v1::ClusterState cl = c.Cluster();
    EXPECT_EQ(cl.workers(), 2);
    ASSERT_EQ(cl.joined_workers_size(), 2);
    std::set<std::string> ids;
    for (const auto& w : cl.joined_workers()) {
      ids.insert(w.id());
      EXPECT_EQ(w.state(), "alive");
      EXPECT_EQ(w.engine(), "simulated");
      EXPECT_EQ(w.kv_pool_capacity_bytes(), 1ULL << 30);
    }
    EXPECT_EQ(ids, (std::set<std::string>{"w0", "w1"}));
    for (const auto& e : cl.worker_engines())
      EXPECT_NE(e.engine().find("remote simulated engine"), std::string::npos) << e.engine();
    std::vector<std::string> wfs;
    for (int i = 0; i < 4; ++i) {
      wfs.push_back("run-" + std::to_string(i));
      c.Submit(wfs.back(), 16);
    }
    auto st = c.Drive(wfs, 240);
    for (const auto& [id, s] : st)
      EXPECT_EQ(s.state(), v1::WORKFLOW_COMPLETED) << id << ": " << *proto::ToJson(s);
  }
  // Serve's bye ends both workers (exit 0); the steps ran in them.
  std::map<std::string, int> exits = c.Stop();
  uint64_t steps = 0;
  for (const char* id : {"w0", "w1"}) {
    ASSERT_TRUE(exits.count(id));
    EXPECT_TRUE(WIFEXITED(exits[id]) && WEXITSTATUS(exits[id]) == 0) << id << ": " << c.Log(id);
    std::string log = c.Log(id);
    size_t at = log.find("steps_run=");
    ASSERT_NE(at, std::string::npos) << log;
    steps += std::stoull(log.substr(at + 10));
  }
  EXPECT_GT(steps, 16u);
}

// A joined worker drained before any work (POST /v1/workers/1:drain, admin) is listed
// draining and drained, runs no step while every workflow completes on the other, and
// :undrain lists it alive again.
TEST(JoinedWorkers, ADrainedJoinedWorkerRunsNothingWhileTheOtherServes) {
  SKIP_WITHOUT_BINARY();
  JoinedCluster c("joined_drain");
  std::string drained_id, serving_id;
  {
    ASSERT_TRUE(c.Start(2));
    // Indices go by join order: the id of worker 1 is whichever joined second.
    const v1::ClusterState before = c.Cluster();
    for (const auto& w : before.joined_workers())
      (w.worker_index() == 1 ? drained_id : serving_id) = w.id();
    http::HttpResponse r = c.Call("POST", "/v1/workers/1:drain", "", kAdmin);
    ASSERT_EQ(r.status, 200) << r.body;
    v1::ClusterState cl = c.Cluster();
    for (const auto& w : cl.joined_workers()) {
      EXPECT_EQ(w.state(), w.worker_index() == 1 ? "draining" : "alive") << w.id();
      EXPECT_EQ(w.drained(), w.worker_index() == 1) << w.id();
    }
    std::vector<std::string> wfs;
    for (int i = 0; i < 3; ++i) {
      wfs.push_back("drain-" + std::to_string(i));
      c.Submit(wfs.back(), 16);
    }
    auto st = c.Drive(wfs, 240);
    for (const auto& [id, s] : st)
      EXPECT_EQ(s.state(), v1::WORKFLOW_COMPLETED) << id << ": " << *proto::ToJson(s);
    r = c.Call("POST", "/v1/workers/1:undrain", "", kAdmin);
    ASSERT_EQ(r.status, 200) << r.body;
    cl = c.Cluster();
    for (const auto& w : cl.joined_workers()) EXPECT_EQ(w.state(), "alive") << w.id();
  }
  std::map<std::string, int> exits = c.Stop();
  auto steps = [&](const std::string& id) -> uint64_t {
    std::string log = c.Log(id);
    size_t at = log.find("steps_run=");
    return at == std::string::npos ? ~0ull : std::stoull(log.substr(at + 10));
  };
  EXPECT_EQ(steps(drained_id), 0u) << c.Log(drained_id);
  EXPECT_GT(steps(serving_id), 16u) << c.Log(serving_id);
}

// A joined worker's KV pool lives in its own process: its KV store (a KvStoreServer beside
// its engine) holds the pool's blocks. A demotion during a tool wait gets them over UCX
// into serve's host tier, and the prefetch after the tool puts them back, under the credit
// the worker granted serve (its hello) and enforces (its heartbeats report what it did).
TEST(JoinedWorkers, KvMovesBetweenTheWorkersStoreAndServeUnderItsCredit) {
  SKIP_WITHOUT_BINARY();
  JoinedCluster c("joined_kv");
  ASSERT_TRUE(c.Start(1, 1280ULL << 20));  // 8000 tokens (1 GiB of KV) fill most of it
  v1::ClusterState before = c.Cluster();
  ASSERT_EQ(before.joined_workers_size(), 1);
  const v1::JoinedWorker w = before.joined_workers(0);
  ASSERT_FALSE(w.kv_address().empty()) << *proto::ToJson(w);
  EXPECT_GT(w.sender_credit_bytes(), 0u) << "the worker's hello granted serve no credit";
  // Joined workers' stores run UCX over TCP: serve connects through the store's ucp_listener.
  EXPECT_EQ(w.kv_connection_flow(), "client-server") << *proto::ToJson(w);
  ASSERT_GE(before.tiers_size(), 1);
  EXPECT_NE(before.tiers(0).backing().find("peer:" + w.kv_address()), std::string::npos)
      << before.tiers(0).backing();
  c.SubmitBig("kv");
  c.WaitFor("kv", [](const v1::WorkflowStatus& s) { return JoinedCluster::NodeDone(s, "llm-0"); });
  c.Event("kv", "bash", "TOOL_STARTED");
  c.WaitFor("kv", JoinedCluster::Demoted);
  c.Event("kv", "bash", "TOOL_FINISHED");
  v1::WorkflowStatus done = c.WaitFor("kv", JoinedCluster::Ended);
  ASSERT_EQ(done.state(), v1::WORKFLOW_COMPLETED) << *proto::ToJson(done);
  bool prefetched = false;
  for (const auto& d : done.decisions()) prefetched |= d.kind() == "prefetch";
  // The store's figures arrive with the next heartbeat (1 s).
  const uint64_t puts = prefetched ? 4 : 2;
  const v1::WorkerKvStats kv =
      c.WaitWorker(w.id(), [puts](const v1::JoinedWorker& x) {
         return x.kv().gets_served() >= 2 && x.kv().puts_committed() >= puts;
       }).kv();
  // 1/256 of 1 GiB in 2 MiB blocks: the 2 blocks written into the store (the emulated KV
  // the engine would have left there), read out by the demotion, and written back by the
  // prefetch.
  EXPECT_GE(kv.gets_served(), 2u) << *proto::ToJson(kv);
  EXPECT_GE(kv.puts_committed(), puts) << *proto::ToJson(kv);
  EXPECT_EQ(kv.puts_refused_credit(), 0u);
  EXPECT_GT(kv.credit_per_sender_bytes(), 0u);
  EXPECT_GT(kv.max_credit_in_use_bytes(), 0u);
  EXPECT_GT(kv.capacity_bytes(), 0u);
  // The credit families an operator scrapes.
  std::string m = c.Call("GET", "/metrics").body;
  const std::string per_sender =
      "switchyard_credit_granted_bytes{worker=\"0\",id=\"w0\",scope=\"per_sender\"} " +
      std::to_string(kv.credit_per_sender_bytes());
  EXPECT_NE(m.find(per_sender), std::string::npos) << per_sender << " not in\n" << m;
  EXPECT_NE(m.find("switchyard_credit_in_use_bytes{worker=\"0\",id=\"w0\",side=\"sender\"}"),
            std::string::npos);
  EXPECT_NE(m.find("switchyard_credit_refused_puts_total{worker=\"0\",id=\"w0\"} 0"),
            std::string::npos);
}

// A worker SIGKILLed while a move into its KV store is in flight (the store is slow: each
// put waits 300 ms before its commit; with two workers the demotion during the tool goes
// to the other worker's store, staged through serve): the workflow's failure record names
// that transfer, ended failed, with no commit; the context is never read half-moved (it
// stayed at its source, or is recomputed) and the workflow completes off the lost worker.
TEST(JoinedWorkers, SigkillDuringAMoveIsRecordedAndTheWorkflowEndsElsewhere) {
  SKIP_WITHOUT_BINARY();
  JoinedCluster c("joined_midxfer");
  ASSERT_TRUE(c.Start(2, 1280ULL << 20, {}, {"--kv-finish-delay-ms", "300"}));
  c.SubmitBig("mx");
  c.WaitFor("mx", [](const v1::WorkflowStatus& s) { return JoinedCluster::NodeDone(s, "llm-0"); });
  c.Event("mx", "bash", "TOOL_STARTED");
  // The first move into a worker's store (its HBM or, as a peer, its store).
  int dst = -1;
  uint64_t xfer = 0;
  c.WaitFor("mx", [&](const v1::WorkflowStatus& s) {
    for (const auto& d : s.decisions()) {
      if (d.kind() != "demote" && d.kind() != "prefetch") continue;
      for (const char* tier : {"hbm@", "peer@"})
        if (d.dst().rfind(tier, 0) == 0) {
          dst = std::stoi(d.dst().substr(std::string(tier).size()));
          xfer = d.transfer_id();
        }
      if (dst >= 0) break;
    }
    return dst >= 0;
  });
  ASSERT_GE(dst, 0);
  std::string victim;
  const v1::ClusterState at_kill = c.Cluster();
  for (const auto& w : at_kill.joined_workers())
    if (w.worker_index() == dst) victim = w.id();
  ASSERT_FALSE(victim.empty());
  ASSERT_EQ(::kill(c.pid(victim), SIGKILL), 0);
  c.WaitFor("mx", [](const v1::WorkflowStatus& s) { return s.worker_losses_size() > 0; });
  c.Event("mx", "bash", "TOOL_FINISHED");
  v1::WorkflowStatus done = c.WaitFor("mx", JoinedCluster::Ended);
  ASSERT_EQ(done.state(), v1::WORKFLOW_COMPLETED) << *proto::ToJson(done);
  ASSERT_GE(done.worker_losses_size(), 1) << *proto::ToJson(done);
  const v1::WorkerLoss& loss = done.worker_losses(0);
  EXPECT_EQ(loss.worker(), dst);
  const v1::TimelineTransfer* t = nullptr;
  for (const auto& x : loss.transfers())
    if (x.transfer_id() == xfer) t = &x;
  ASSERT_NE(t, nullptr) << "the move in flight is not in the record: " << *proto::ToJson(loss);
  EXPECT_EQ(t->outcome(), "failed") << *proto::ToJson(*t);
  bool committed = false;
  for (const auto& ev : t->events()) committed |= ev.event() == "committed";
  EXPECT_FALSE(committed) << "a transfer to the lost worker shows a commit";
  for (const auto& d : done.decisions())
    if (d.kind() == "place" && d.node_id() == "llm-1") {
      EXPECT_NE(d.worker(), dst) << d.line();
    }
}

// A peer demotion (two workers: during the tool, main's blocks go from the pool of the
// worker that ran llm-0 to the other worker's store) is put directly by the source's
// worker, ordered over its control connection. Returns the demotion's workers (src, dst)
// once serve sent the order; -1s when the demotion went elsewhere.
std::pair<int, int> AwaitDirectDemotion(JoinedCluster& c, const std::string& wf) {
  c.SubmitBig(wf);
  c.WaitFor(wf, [](const v1::WorkflowStatus& s) { return JoinedCluster::NodeDone(s, "llm-0"); });
  c.Event(wf, "bash", "TOOL_STARTED");
  int src = -1, dst = -1;
  c.WaitFor(wf, [&](const v1::WorkflowStatus& s) {
    for (const auto& d : s.decisions())
      if (d.kind() == "demote" && d.dst().rfind("peer@", 0) == 0 && d.src().rfind("hbm@", 0) == 0) {
        src = std::stoi(d.src().substr(4));
        dst = std::stoi(d.dst().substr(5));
      }
    return dst >= 0 || JoinedCluster::Demoted(s);
  });
  if (dst < 0) return {-1, -1};
  // The order leaves once the fill (serve's put of the emulated bytes into src's store) is in.
  const bool ordered = testing::WaitUntil([&] {
    const v1::ClusterState cl = c.Cluster();
    for (const auto& w : cl.joined_workers())
      if (w.worker_index() == src && w.direct_orders() > 0) return true;
    return false;
  });
  if (!ordered) ADD_FAILURE() << "no put order was sent to worker " << src;
  return {src, dst};
}

v1::JoinedWorker Listed(JoinedCluster& c, int index) {
  const v1::ClusterState cl = c.Cluster();
  for (const auto& w : cl.joined_workers())
    if (w.worker_index() == index) return w;
  return {};
}

TEST(JoinedWorkers, APeerDemotionIsPutDirectlyByTheSourcesWorker) {
  SKIP_WITHOUT_BINARY();
  JoinedCluster c("joined_direct");
  ASSERT_TRUE(c.Start(2, 1280ULL << 20));
  auto [src, dst] = AwaitDirectDemotion(c, "pd");
  ASSERT_GE(dst, 0) << "the demotion did not go to the other worker's store";
  c.WaitFor("pd", [](const v1::WorkflowStatus& st) {
    for (const auto& kv : st.kv())
      if (kv.context() == "main" && !kv.in_flight() && kv.tier() == "peer") return true;
    return false;
  });
  // Serve's own transport moved none of main's bytes between the stores: it got nothing
  // out of the source's store (the relay would have) and put nothing into the
  // destination's; the source's worker put them, and the destination committed them.
  const v1::JoinedWorker a = Listed(c, src), b = Listed(c, dst);
  EXPECT_EQ(a.serve_gets(), 0u) << *proto::ToJson(a);
  EXPECT_EQ(b.serve_puts(), 0u) << *proto::ToJson(b);
  EXPECT_GE(a.direct_orders(), 1u);
  v1::JoinedWorker sa, sb;
  testing::WaitUntil([&] {  // the stores' figures come with their heartbeats (1 s)
    sa = Listed(c, src);
    sb = Listed(c, dst);
    return sa.kv().direct_puts_committed() >= a.direct_orders() &&
           sb.kv().puts_committed() >= sa.kv().direct_puts_committed();
  });
  EXPECT_EQ(sa.kv().direct_puts_committed(), a.direct_orders()) << *proto::ToJson(sa);
  EXPECT_EQ(sa.kv().direct_puts_failed(), 0u);
  EXPECT_GT(sa.kv().direct_put_bytes(), 0u);
  EXPECT_GE(sb.kv().puts_committed(), sa.kv().direct_puts_committed()) << *proto::ToJson(sb);
  c.Event("pd", "bash", "TOOL_FINISHED");
  v1::WorkflowStatus done = c.WaitFor("pd", JoinedCluster::Ended);
  EXPECT_EQ(done.state(), v1::WORKFLOW_COMPLETED) << *proto::ToJson(done);
}

// SIGKILL of the destination while the direct put waits there (each put its store takes
// waits 2.5 s before its commit; the kill comes once the destination's heartbeat shows
// credit in use, i.e. a put accepted and not committed): the move ends failed with no
// commit, the loss is recorded with that transfer, and the workflow completes off the lost
// worker. (Killed while the source's UCX was still connecting to it, the source could die
// too in UCX 1.13's worker-address flow, no longer the default over TCP:
// transport/README.md; KvStoreClientKillTest covers kills while connecting.)
TEST(JoinedWorkers, SigkillOfADirectPutsDestinationFailsTheMoveAndTheWorkflowEnds) {
  SKIP_WITHOUT_BINARY();
  JoinedCluster c("joined_direct_kill");
  ASSERT_TRUE(c.Start(2, 1280ULL << 20, {}, {"--kv-finish-delay-ms", "2500"}));
  auto [src, dst] = AwaitDirectDemotion(c, "dk");
  ASSERT_GE(dst, 0) << "the demotion did not go to the other worker's store";
  const v1::JoinedWorker listed = c.WaitWorker(  // heartbeats every second
      Listed(c, dst).id(),
      [](const v1::JoinedWorker& w) { return w.kv().credit_in_use_bytes() > 0; });
  ASSERT_GT(listed.kv().credit_in_use_bytes(), 0u)
      << "no put was seen waiting at the destination: " << *proto::ToJson(listed);
  std::string victim = listed.id();
  ASSERT_EQ(::kill(c.pid(victim), SIGKILL), 0);
  c.WaitFor("dk", [](const v1::WorkflowStatus& s) { return s.worker_losses_size() > 0; });
  c.Event("dk", "bash", "TOOL_FINISHED");
  v1::WorkflowStatus done = c.WaitFor("dk", JoinedCluster::Ended);
  ASSERT_EQ(done.state(), v1::WORKFLOW_COMPLETED) << *proto::ToJson(done);
  const v1::WorkerLoss& loss = done.worker_losses(0);
  EXPECT_EQ(loss.worker(), dst);
  bool failed = false;
  for (const auto& x : loss.transfers()) {
    bool committed = false;
    for (const auto& ev : x.events()) committed |= ev.event() == "committed";
    EXPECT_FALSE(committed) << "a transfer to the lost worker shows a commit: "
                            << *proto::ToJson(x);
    failed |= x.outcome() == "failed";
  }
  EXPECT_TRUE(failed) << "the move in flight is not in the record: " << *proto::ToJson(loss);
  for (const auto& d : done.decisions()) {
    if (d.kind() == "place" && d.node_id() == "llm-1") {
      EXPECT_NE(d.worker(), dst) << d.line();
    }
  }
}

TEST(JoinedWorkers, SigkilledWorkerIsLostAndEveryWorkflowStillEnds) {
  SKIP_WITHOUT_BINARY();
  JoinedCluster c("joined_kill");
  ASSERT_TRUE(c.Start(2));
  std::vector<std::string> wfs;
  for (int i = 0; i < 6; ++i) {
    wfs.push_back("kill-" + std::to_string(i));
    c.Submit(wfs.back(), 600);
  }
  // Wait until LLM nodes run, then kill the worker running the most of them (the worker of
  // a running node: its latest place decision).
  int victim = -1;
  testing::WaitUntil(
      [&] {
        std::map<int, int> running;
        for (const std::string& id : wfs) {
          v1::WorkflowStatus s = c.Get<v1::WorkflowStatus>("/v1/workflows/" + id);
          for (const auto& n : s.nodes()) {
            if (n.kind() != v1::LLM || n.state() != v1::NODE_RUNNING) continue;
            int worker = -1;
            for (const auto& d : s.decisions())
              if (d.kind() == "place" && d.node_id() == n.id()) worker = d.worker();
            if (worker >= 0) ++running[worker];
          }
        }
        int most = 0;
        for (const auto& [w, k] : running)
          if (k > most) most = k, victim = w;
        return victim >= 0;
      },
      120);
  ASSERT_GE(victim, 0) << "no LLM node was seen running";
  std::string victim_id;
  v1::ClusterState at_kill = c.Cluster();
  for (const auto& w : at_kill.joined_workers())
    if (w.worker_index() == victim) victim_id = w.id();
  ASSERT_EQ(::kill(c.pid(victim_id), SIGKILL), 0);

  // Marked lost (the closed connection; missed heartbeats at the latest).
  const v1::JoinedWorker lost =
      c.WaitWorker(victim_id, [](const v1::JoinedWorker& w) { return w.state() == "lost"; });
  ASSERT_EQ(lost.state(), "lost") << victim_id << " never marked lost";

  auto st = c.Drive(wfs, 300);
  int completed = 0, recomputed = 0, failed_by_loss = 0;
  std::string all;
  for (const auto& [id, s] : st) {
    all += *proto::ToJson(s) + "\n";
    ASSERT_TRUE(JoinedCluster::Ended(s)) << id << " did not end: " << *proto::ToJson(s);
    if (s.state() == v1::WORKFLOW_COMPLETED) ++completed;
    if (s.state() == v1::WORKFLOW_FAILED) {
      EXPECT_FALSE(s.failure_reason().empty()) << id;
      if (s.failure_reason().find("lost") != std::string::npos) ++failed_by_loss;
    }
    int side_admits = 0;
    std::map<std::string, bool> retried_after_loss;  // LLM node -> placed elsewhere since
    for (const auto& d : s.decisions()) {
      if (d.kind() == "admit" && d.node_id() == "side") ++side_admits;
      if (d.kind() == "retry" && d.reason().find("lost") != std::string::npos)
        retried_after_loss[d.node_id()] = false;
      if (d.kind() == "place" && retried_after_loss.count(d.node_id())) {
        EXPECT_NE(d.worker(), victim) << id << ": placed on the lost worker again";
        retried_after_loss[d.node_id()] = true;
      }
    }
    for (const auto& [node, placed] : retried_after_loss) recomputed += placed;
    // A node retried or failed by the loss: its workflow's log has the failure record,
    // naming the victim, why it was lost, the node and what the scheduler did.
    if (!retried_after_loss.empty() || s.failure_reason().find("lost") != std::string::npos) {
      ASSERT_GE(s.worker_losses_size(), 1) << id << ": no failure record\n" << *proto::ToJson(s);
      const v1::WorkerLoss& l = s.worker_losses(0);
      EXPECT_EQ(l.worker(), victim) << id;
      EXPECT_FALSE(l.reason().empty()) << id;
      EXPECT_GT(l.nodes_size() + l.contexts_size() + l.transfers_size(), 0) << id;
      EXPECT_GT(l.actions_size(), 0) << id;
    }
    EXPECT_LE(side_admits, 1) << id << ": the side-effect tool was started twice";
    for (const auto& n : s.nodes())
      if (n.id() == "side") {
        EXPECT_LE(n.attempts(), 1u) << id << ": side effect ran twice";
      }
  }
  // The killed worker ran LLM nodes: they were retried on the other worker (recomputing
  // their context there), or their workflow failed naming the loss.
  EXPECT_GT(recomputed + failed_by_loss, 0) << "victim " << victim_id << "\n" << all;
  EXPECT_GT(completed, 0);
}

// A SIGKILLed worker restarted with the same id rejoins as a new incarnation (a larger
// epoch) under its scheduler index: what was queued while it was lost runs on it, and its
// new KV store holds a context demoted to serve's host tier and prefetched back.
TEST(JoinedWorkers, AKilledWorkerRestartsRejoinsAndRunsWorkflowsAgain) {
  SKIP_WITHOUT_BINARY();
  JoinedCluster c("joined_rejoin");
  ASSERT_TRUE(c.Start(1, 1280ULL << 20));
  c.Submit("before", 4);
  ASSERT_EQ(c.Drive({"before"}, 120)["before"].state(), v1::WORKFLOW_COMPLETED);
  v1::JoinedWorker first = c.Cluster().joined_workers(0);
  EXPECT_EQ(first.joins(), 1u);
  c.Kill("w0");
  c.WaitWorker("w0", [](const auto& w) { return w.state() == "lost"; });
  c.Submit("during", 4);  // no worker: it waits
  // The scheduler has seen it and queued its ready LLM node (it has no worker to place it
  // on): only then does "still running" say that it waits.
  ASSERT_TRUE(
      testing::WaitUntil([&] { return c.service()->scheduler()->metrics().queued_nodes() == 1; }));
  EXPECT_EQ(c.Get<v1::WorkflowStatus>("/v1/workflows/during").state(), v1::WORKFLOW_RUNNING);
  c.Respawn("w0");
  v1::JoinedWorker back = c.WaitWorker("w0", [](const auto& w) { return w.joins() == 2; });
  EXPECT_EQ(back.state(), "alive") << *proto::ToJson(back);
  EXPECT_GT(back.epoch(), first.epoch());
  EXPECT_EQ(back.worker_index(), first.worker_index());
  EXPECT_NE(back.kv_address(), first.kv_address()) << "the new process's KV store";
  auto during = c.Drive({"during"}, 120)["during"];
  ASSERT_EQ(during.state(), v1::WORKFLOW_COMPLETED) << *proto::ToJson(during);
  // A demotion out of the new incarnation's store and a prefetch back into it.
  c.SubmitBig("big");
  c.WaitFor("big", [](const auto& s) { return JoinedCluster::NodeDone(s, "llm-0"); });
  c.Event("big", "bash", "TOOL_STARTED");
  auto demoted = c.WaitFor("big", JoinedCluster::Demoted);
  ASSERT_TRUE(JoinedCluster::Demoted(demoted)) << *proto::ToJson(demoted);
  c.Event("big", "bash", "TOOL_FINISHED");
  auto big = c.WaitFor("big", [](const auto& s) { return JoinedCluster::Ended(s); });
  EXPECT_EQ(big.state(), v1::WORKFLOW_COMPLETED) << *proto::ToJson(big);
  // The demotion read main's blocks from the new store (its heartbeats carry the figures).
  v1::JoinedWorker now = c.WaitWorker("w0", [](const auto& w) { return w.kv().gets_served() > 0; });
  EXPECT_GT(now.kv().puts_committed(), 0u) << *proto::ToJson(now);
}

// A worker process with a new id, started while serve runs, takes the place of a
// SIGKILLed one (its scheduler index, its KV store as that worker's HBM tier): what was
// queued while no worker was alive runs on it; the dead worker's id is no longer listed.
TEST(JoinedWorkers, ANewWorkerProcessReplacesAKilledOne) {
  SKIP_WITHOUT_BINARY();
  JoinedCluster c("joined_replace");
  ASSERT_TRUE(c.Start(1, 1280ULL << 20));
  v1::JoinedWorker first = c.Cluster().joined_workers(0);
  c.Kill("w0");
  c.WaitWorker("w0", [](const auto& w) { return w.state() == "lost"; });
  c.Submit("queued", 4);  // no worker: it waits
  c.SpawnNew("spare");
  v1::JoinedWorker spare =
      c.WaitWorker("spare", [](const auto& w) { return w.state() == "alive"; });
  EXPECT_EQ(spare.worker_index(), first.worker_index());
  EXPECT_NE(spare.kv_address(), first.kv_address());
  ASSERT_EQ(c.Cluster().joined_workers_size(), 1) << "the number of workers is fixed";
  auto queued = c.Drive({"queued"}, 120)["queued"];
  // Serve has no local worker: the replacement ran it.
  ASSERT_EQ(queued.state(), v1::WORKFLOW_COMPLETED) << *proto::ToJson(queued);
  EXPECT_EQ(c.Cluster().joined_workers(0).id(), "spare");
}

// Membership in etcd (a real etcd on loopback, started here): the worker registers under a
// 2 s lease; stopped (SIGSTOP: its keep-alives stop, its connection stays open and the
// control heartbeats are 30 s apart), it is marked lost when the lease expires, naming
// etcd: the loss came from etcd, not from the connection (missed heartbeats would take
// 90 s, past the wait's bound, and name the heartbeats).
TEST(JoinedWorkers, AWorkerWhoseEtcdLeaseExpiresIsLostByEtcd) {
  SKIP_WITHOUT_BINARY();
  cluster::testing::EtcdProcess etcd;
  std::string why = etcd.Start();
  SY_REQUIRE_ETCD_OR_SKIP(why);
  JoinedCluster c("joined_etcd");
  ASSERT_TRUE(c.Start(1, 4ULL << 30,
                      [&](serve::ServeJoinOptions* o) {
                        o->etcd_url = etcd.url();
                        o->cluster = "t1";
                        o->heartbeat = Seconds(30);
                      },
                      {"--etcd", etcd.url(), "--cluster", "t1", "--lease-ttl-s", "2"}));
  ASSERT_EQ(c.Cluster().joined_workers(0).state(), "alive");
  ASSERT_EQ(::kill(c.pid("w0"), SIGSTOP), 0);
  v1::JoinedWorker w = c.WaitWorker("w0", [](const auto& x) { return x.state() == "lost"; });
  ::kill(c.pid("w0"), SIGCONT);
  ASSERT_EQ(w.state(), "lost") << *proto::ToJson(w);
  EXPECT_NE(w.lost_reason().find("etcd"), std::string::npos) << w.lost_reason();
  EXPECT_EQ(w.lost_reason().find("heartbeat"), std::string::npos) << w.lost_reason();
  // It returns (a new process: it registers under a new epoch and says hello): admitted
  // again under its index, and a workflow runs on it.
  c.Kill("w0");
  c.Respawn("w0");
  v1::JoinedWorker back = c.WaitWorker("w0", [](const auto& x) { return x.joins() == 2; });
  EXPECT_EQ(back.state(), "alive") << *proto::ToJson(back);
  EXPECT_GT(back.epoch(), w.epoch());
  c.Submit("after-etcd", 4);
  EXPECT_EQ(c.Drive({"after-etcd"}, 120)["after-etcd"].state(), v1::WORKFLOW_COMPLETED);
}

TEST(JoinedWorkers, BinaryWorkerWithAnotherProtocolVersionIsRefusedByName) {
  SKIP_WITHOUT_BINARY();
  auto js = JoinServer::Listen("127.0.0.1:0");
  ASSERT_TRUE(js.ok()) << js.status();
  std::string out = ::testing::TempDir() + "/sy_refused_" + std::to_string(::getpid()) + ".log";
  pid_t pid = ::fork();
  if (pid == 0) {
    FILE* f = std::freopen(out.c_str(), "w", stdout);
    (void)f;
    ::dup2(STDOUT_FILENO, STDERR_FILENO);
    std::string bin = Binary();
    ::execl(bin.c_str(), bin.c_str(), "worker", "--join", (*js)->address().c_str(), "--engine",
            "simulated", "--protocol-version", "7", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  JoinOptions o;
  o.expect = 1;
  o.timeout = Seconds(60);
  o.max_refusals = 1;  // give up at the first refusal
  Status st = (*js)->AwaitWorkers(o);
  EXPECT_TRUE(st.IsFailedPrecondition()) << st;
  EXPECT_NE(st.message().find("version 7"), std::string::npos) << st;
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 3);
  std::ifstream f(out);
  std::stringstream s;
  s << f.rdbuf();
  EXPECT_NE(s.str().find("protocol version mismatch: worker speaks worker control protocol "
                         "version 7, serve speaks version " +
                         std::to_string(kProtocolVersion)),
            std::string::npos)
      << s.str();
  std::filesystem::remove(out);
}

// A worker that joined, then died while serve waited for the others (here: before the
// service opens), is a store no worker backs, as a spare slot is: the tier factory does
// not dial its dead store (which would fail the service's start), and its rejoin
// reconnects the tier later.
TEST(JoinedWorkers, AWorkerLostBeforeTheServiceOpensDoesNotStopItsStart) {
  driver::SchedulerConfig config;
  serve::ServeJoinOptions jo;
  jo.local_workers = 0;
  jo.remote_workers = 1;
  jo.heartbeat = Millis(100);
  std::unique_ptr<ControlConn> conn;
  std::thread client;
  jo.listening = [&](const std::string& address) {
    client = std::thread([&conn, address] {
      auto c = ControlConn::Connect(address, Seconds(30));
      if (!c.ok()) return;
      v1::WorkerControl h;
      h.mutable_hello()->set_protocol_version(kProtocolVersion);
      h.mutable_hello()->set_worker_id("w0");
      h.mutable_hello()->set_engine("simulated");
      h.mutable_hello()->set_epoch(1);
      h.mutable_hello()->set_kv_address("127.0.0.1:1");  // nothing listens there
      if ((*c)->Send(h).ok() && (*c)->ReadOne(Seconds(30)).ok()) conn = std::move(*c);
    });
  };
  auto join = serve::JoinRemoteWorkers(jo, &config);
  client.join();
  ASSERT_TRUE(join.ok()) << join.status();
  ASSERT_TRUE(conn);
  conn.reset();  // the worker dies before the service opens
  ASSERT_TRUE(testing::WaitUntil([&] { return (*join)->worker(0)->lost(); }));
  kv_tiers::TierOptions to;
  to.capacity_bytes = 1 << 20;
  to.slot_bytes = 4096;
  auto tier = config.hbm_tier_factory(0, to);
  ASSERT_TRUE(tier.ok()) << tier.status();
  ASSERT_TRUE(*tier);
  auto* remote = dynamic_cast<kv_tiers::remote::KvStoreTier*>(tier->get());
  ASSERT_NE(remote, nullptr);
  EXPECT_EQ(remote->client(), nullptr) << "detached until a worker backs it";
  (*join)->Detach();
}

}  // namespace
}  // namespace switchyard::workers
