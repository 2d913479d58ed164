// Joined workers that compute: serve (engine "cpu", a tiny model with random weights) and
// `switchyard worker --join --engine cpu` processes on loopback. The workers compute the
// calls; during long tool waits the scheduler moves contexts out of a worker's pool (the
// worker exports its real blocks into its KV store, serve moves them on) and back (into
// whichever worker runs the next call: an import). Every context's tokens must equal those
// of one in-process CPU engine that never moved anything (batch- and restore-invariance
// across processes). A worker with another model is refused by name.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "cpu_engine/cpu_engine.h"
#include "scheduler/types.h"
#include "tests/workers/joined_cluster.h"

namespace switchyard::workers {
namespace {

std::string ModelPath(const char* name) {
  return std::string(SY_SOURCE_DIR) + "/configs/models/" + name + ".json";
}

// Three agents: llm-0 creates "main" (1200 prompt tokens, 6 out), a long tool, llm-1
// extends it (+60, 6 out).
void SubmitAgents(JoinedCluster& c, const std::vector<std::string>& ids) {
  for (const std::string& id : ids) {
    std::string body = R"({"id":")" + id + R"(","nodes":[
        {"id":"llm-0","kind":"LLM","modelId":"tiny-llama-2l","cacheRefs":[{"context":"main","mode":"CREATE"}],
         "hints":{"promptTokens":1200,"extendTokens":1200,"maxOutputTokens":6}},
        {"id":"bash","kind":"TOOL","toolName":"Bash","deps":["llm-0"],"hints":{"expectedDurationMs":600000}},
        {"id":"llm-1","kind":"LLM","modelId":"tiny-llama-2l","deps":["bash"],
         "cacheRefs":[{"context":"main","mode":"EXTEND"}],
         "hints":{"promptTokens":1266,"extendTokens":60,"maxOutputTokens":6}}]})";
    http::HttpResponse r = c.Call("POST", "/v1/workflows", body);
    ASSERT_EQ(r.status, 201) << r.body;
    ASSERT_EQ(c.Call("POST", "/v1/workflows/" + id + ":close").status, 200);
  }
}

// Runs the agents: each tool starts once llm-0 is done and finishes once `main` left the
// pool (or after 5 s: the scheduler may keep it; at once without wait_for_demotions);
// then the workflows run to the end.
// Returns each workflow's "main" token ids (prompt and outputs) as serve recorded them.
std::map<std::string, std::vector<int32_t>> RunAgents(JoinedCluster& c,
                                                      const std::vector<std::string>& ids,
                                                      bool wait_for_demotions) {
  SubmitAgents(c, ids);
  for (const std::string& id : ids) {
    c.WaitFor(id, [](const v1::WorkflowStatus& s) { return JoinedCluster::NodeDone(s, "llm-0"); });
    c.Event(id, "bash", "TOOL_STARTED");
  }
  for (const std::string& id : ids) {
    if (!wait_for_demotions) break;
    testing::WaitUntil(
        [&] { return JoinedCluster::Demoted(c.Get<v1::WorkflowStatus>("/v1/workflows/" + id)); },
        5);
  }
  for (const std::string& id : ids) c.Event(id, "bash", "TOOL_FINISHED");
  std::map<std::string, std::vector<int32_t>> out;
  for (const std::string& id : ids) {
    v1::WorkflowStatus s = c.WaitFor(id, [](const v1::WorkflowStatus& s) {
      return s.state() == v1::WORKFLOW_COMPLETED || s.state() == v1::WORKFLOW_FAILED;
    });
    EXPECT_EQ(s.state(), v1::WORKFLOW_COMPLETED) << *proto::ToJson(s);
    const std::vector<int32_t>* log = c.token_log()->Find(scheduler::ContextKey(id, "main"));
    if (log) out[id] = *log;
  }
  return out;
}

void UseCpuEngine(service::ServiceOptions* so, uint64_t pool_bytes) {
  so->scheduler.engine = "cpu";
  so->scheduler.model_path = ModelPath("tiny-llama-2l");
  so->scheduler.kv_pool_bytes = pool_bytes;
  so->scheduler.kv_bytes_scale = 1;
}

// The reference: the agents on one in-process CPU engine whose pool holds everything.
std::map<std::string, std::vector<int32_t>> Reference(const std::vector<std::string>& ids) {
  JoinedCluster ref("cpu_ref");
  bool started = ref.Start(
      0, 4ULL << 30, [](serve::ServeJoinOptions* jo) { jo->local_workers = 1; }, {},
      [](service::ServiceOptions* so) { UseCpuEngine(so, 64ULL << 20); });
  EXPECT_TRUE(started);
  if (!started) return {};
  std::map<std::string, std::vector<int32_t>> want = RunAgents(ref, ids, false);
  v1::ClusterState cl = ref.Cluster();
  EXPECT_EQ(cl.decisions_by_kind().count("demote"), 0u) << "the reference moved nothing";
  EXPECT_EQ(want.size(), ids.size());
  for (const auto& [id, log] : want) EXPECT_EQ(log.size(), 1200u + 6 + 60 + 6) << id;
  return want;
}

TEST(JoinedCpuWorkers, ContextsMoveThroughJoinedPoolsAndTokensMatchOneEngine) {
  SKIP_WITHOUT_BINARY();
  const std::vector<std::string> ids = {"a", "b", "c"};
  std::map<std::string, std::vector<int32_t>> want = Reference(ids);
  ASSERT_EQ(want.size(), ids.size());

  JoinedCluster c("cpu_joined");
  // Two workers of 1 MiB (2048 tokens of 512 B): three 1.2k-token contexts cannot all stay.
  ASSERT_TRUE(c.Start(2, 4ULL << 30, {}, {},
                      [](service::ServiceOptions* so) { UseCpuEngine(so, 1ULL << 20); }));
  v1::ClusterState before = c.Cluster();
  ASSERT_EQ(before.joined_workers_size(), 2);
  for (const auto& w : before.joined_workers()) EXPECT_EQ(w.engine(), "cpu") << w.id();
  for (const auto& e : before.worker_engines()) {
    EXPECT_NE(e.engine().find("remote cpu engine"), std::string::npos) << e.engine();
    EXPECT_NE(e.kv_pool().find("cpu engine KV pool of worker"), std::string::npos) << e.kv_pool();
    EXPECT_EQ(e.kv_pool_capacity_bytes(), 1ULL << 20);
    EXPECT_TRUE(e.random_weights());
  }
  std::map<std::string, std::vector<int32_t>> got = RunAgents(c, ids, true);
  auto tail = [](const std::vector<int32_t>& v) {
    std::string s;
    for (size_t i = v.size() > 16 ? v.size() - 16 : 0; i < v.size(); ++i)
      s += std::to_string(v[i]) + " ";
    return s + "(" + std::to_string(v.size()) + " ids)";
  };
  for (const std::string& id : ids)
    EXPECT_EQ(got[id], want[id]) << id << ": tokens differ; got ..." << tail(got[id])
                                 << ", want ..." << tail(want[id]);

  v1::ClusterState after = c.Cluster();
  uint64_t exported = 0, imported = 0;
  for (const auto& [dst, n] : after.real_bytes_moved()) {
    if (dst.rfind("peer:", 0) == 0) exported += n;  // pool -> the worker's store
    if (dst.find("cpu engine KV pool of worker") != std::string::npos) imported += n;
  }
  auto count = [&](const char* kind) {
    auto it = after.decisions_by_kind().find(kind);
    return it == after.decisions_by_kind().end() ? uint64_t{0} : uint64_t{it->second};
  };
  std::printf(
      "decisions: demote %llu, prefetch %llu, discard %llu; real bytes: exported %llu, "
      "imported %llu\n",
      static_cast<unsigned long long>(count("demote")),
      static_cast<unsigned long long>(count("prefetch")),
      static_cast<unsigned long long>(count("discard")), static_cast<unsigned long long>(exported),
      static_cast<unsigned long long>(imported));
  EXPECT_GT(count("demote"), 0u) << *proto::ToJson(after);
  EXPECT_GT(exported, 0u) << "no context left a joined pool: " << *proto::ToJson(after);
  // Each context that came back (not recomputed) was imported whole.
  if (count("prefetch") > 0) {
    EXPECT_GT(imported, 0u) << *proto::ToJson(after);
  }
  uint64_t puts = 0;  // the stores' figures come with their heartbeats
  testing::WaitUntil([&] {
    const v1::ClusterState now = c.Cluster();
    for (const auto& w : now.joined_workers()) puts += w.kv().puts_committed();
    return puts > 0;
  });
  EXPECT_GT(puts, 0u) << "the exports were committed in the workers' stores";
}

// A worker SIGKILLed after the first calls: its contexts are lost with it, rebuilt on the
// other worker from the token ids serve recorded, and the agents' tokens are still those
// of the reference.
TEST(JoinedCpuWorkers, AKilledWorkersContextsAreRebuiltElsewhereWithTheSameTokens) {
  SKIP_WITHOUT_BINARY();
  const std::vector<std::string> ids = {"k1", "k2"};
  std::map<std::string, std::vector<int32_t>> want = Reference(ids);
  ASSERT_EQ(want.size(), ids.size());
  JoinedCluster c("cpu_kill");
  ASSERT_TRUE(c.Start(2, 4ULL << 30, {}, {},
                      [](service::ServiceOptions* so) { UseCpuEngine(so, 4ULL << 20); }));
  SubmitAgents(c, ids);
  for (const std::string& id : ids) {
    c.WaitFor(id, [](const v1::WorkflowStatus& s) { return JoinedCluster::NodeDone(s, "llm-0"); });
    c.Event(id, "bash", "TOOL_STARTED");
  }
  // The worker to kill: one that holds a context in its pool now.
  int victim = -1;
  for (const std::string& id : ids) {
    const v1::WorkflowStatus st = c.Get<v1::WorkflowStatus>("/v1/workflows/" + id);
    for (const auto& kv : st.kv())
      if (kv.context() == "main" && kv.tier() == "hbm") victim = kv.worker();
  }
  ASSERT_GE(victim, 0) << "no context in a pool";
  std::string name;
  const v1::ClusterState cl = c.Cluster();
  for (const auto& w : cl.joined_workers())
    if (w.worker_index() == victim) name = w.id();
  ASSERT_FALSE(name.empty());
  c.Kill(name);
  c.WaitWorker(name, [](const v1::JoinedWorker& w) { return w.state() == "lost"; });
  for (const std::string& id : ids) c.Event(id, "bash", "TOOL_FINISHED");
  for (const std::string& id : ids) {
    v1::WorkflowStatus s = c.WaitFor(id, [](const v1::WorkflowStatus& s) {
      return s.state() == v1::WORKFLOW_COMPLETED || s.state() == v1::WORKFLOW_FAILED;
    });
    EXPECT_EQ(s.state(), v1::WORKFLOW_COMPLETED) << *proto::ToJson(s);
  }
  for (const std::string& id : ids) {
    const std::vector<int32_t>* log = c.token_log()->Find(scheduler::ContextKey(id, "main"));
    ASSERT_NE(log, nullptr) << id;
    EXPECT_EQ(*log, want[id]) << id << ": tokens differ after the rebuild";
  }
}

// A spare slot: serve starts with one CPU worker and a vacant slot, a second worker
// process joins while serve runs and takes it, and the agents run on both — its pool's KV
// moving through its store like the first's — with the reference's tokens.
TEST(JoinedCpuWorkers, AWorkerThatJoinsLaterTakesASpareSlotAndComputes) {
  SKIP_WITHOUT_BINARY();
  const std::vector<std::string> ids = {"s1", "s2", "s3"};
  std::map<std::string, std::vector<int32_t>> want = Reference(ids);
  ASSERT_EQ(want.size(), ids.size());
  JoinedCluster c("cpu_spare");
  ASSERT_TRUE(c.Start(
      1, 4ULL << 30, [](serve::ServeJoinOptions* jo) { jo->spare_workers = 1; }, {},
      [](service::ServiceOptions* so) { UseCpuEngine(so, 1ULL << 20); }));
  v1::ClusterState before = c.Cluster();
  ASSERT_EQ(before.workers(), 2);
  ASSERT_EQ(before.joined_workers_size(), 2);
  EXPECT_EQ(before.joined_workers(1).state(), "vacant") << *proto::ToJson(before);
  c.SpawnNew("late");
  v1::JoinedWorker late =
      c.WaitWorker("late", [](const v1::JoinedWorker& w) { return w.state() == "alive"; });
  EXPECT_EQ(late.worker_index(), 1);
  EXPECT_FALSE(late.kv_address().empty());
  std::map<std::string, std::vector<int32_t>> got = RunAgents(c, ids, true);
  for (const std::string& id : ids) EXPECT_EQ(got[id], want[id]) << id << ": tokens differ";
  v1::ClusterState after = c.Cluster();
  bool late_engine = false;
  for (const auto& e : after.worker_engines())
    late_engine |= e.worker() == 1 && e.engine().find("worker late") != std::string::npos;
  EXPECT_TRUE(late_engine) << *proto::ToJson(after);
  uint64_t exported = 0, late_store = 0;  // the spare slot's store keeps its first name
  for (const auto& [dst, n] : after.real_bytes_moved()) {
    if (dst.rfind("peer:", 0) == 0) exported += n;
    if (dst == "peer:detached-hbm-w1") late_store += n;
  }
  EXPECT_GT(exported, 0u) << *proto::ToJson(after);
  EXPECT_GT(late_store, 0u) << "the late worker's contexts moved through its store";
  std::printf("exported %llu B, of which from the late worker's pool %llu B\n",
              static_cast<unsigned long long>(exported),
              static_cast<unsigned long long>(late_store));
}

// Prefill/decode disaggregation across processes: serve (--disaggregation always) with a
// prefill worker and a decode worker (`worker --role`). Each call prefills on the first,
// hands off once its first token is out, and its KV — the real blocks — moves to the
// decode worker's pool, which decodes the rest. The tokens are those of one colocated
// engine.
TEST(JoinedCpuWorkers, DisaggregatedCallsMoveTheirKvToTheDecodeWorkerAndAnswerAsColocated) {
  SKIP_WITHOUT_BINARY();
  const std::vector<std::string> ids = {"d1", "d2"};
  std::map<std::string, std::vector<int32_t>> want = Reference(ids);
  ASSERT_EQ(want.size(), ids.size());
  JoinedCluster c("cpu_pd");
  c.AddWorkerArgs("w0", {"--role", "prefill"});
  c.AddWorkerArgs("w1", {"--role", "decode"});
  ASSERT_TRUE(c.Start(2, 4ULL << 30, {}, {}, [](service::ServiceOptions* so) {
    UseCpuEngine(so, 4ULL << 20);
    so->scheduler.disaggregation = scheduler::Disaggregation::kAlways;
  }));
  const v1::ClusterState before = c.Cluster();
  std::map<int, std::string> roles;  // worker index -> role, from the hellos
  for (const auto& w : before.joined_workers()) roles[w.worker_index()] = w.role();
  for (const auto& e : before.worker_engines())
    EXPECT_EQ(e.role(), roles[e.worker()]) << "worker " << e.worker();
  int decode = -1;
  for (const auto& [w, role] : roles)
    if (role == "decode") decode = w;
  ASSERT_GE(decode, 0) << *proto::ToJson(before);

  std::map<std::string, std::vector<int32_t>> got = RunAgents(c, ids, false);
  for (const std::string& id : ids) EXPECT_EQ(got[id], want[id]) << id << ": tokens differ";

  const v1::ClusterState after = c.Cluster();
  const v1::DisaggregationState& pd = after.disaggregation();
  EXPECT_EQ(pd.mode(), "always");
  // Every call (two per agent) prefilled on the prefill worker and handed off there.
  EXPECT_EQ(pd.disaggregated(), 2 * ids.size()) << *proto::ToJson(after);
  EXPECT_EQ(pd.handoffs(), 2 * ids.size()) << *proto::ToJson(after);
  EXPECT_GT(pd.moves(), 0u) << *proto::ToJson(after);
  EXPECT_GT(pd.bytes_moved(), 0u);
  uint64_t into_decode = 0;
  const std::string pool = "cpu engine KV pool of worker " + std::to_string(decode);
  for (const auto& [dst, n] : after.real_bytes_moved())
    if (dst.find(pool) != std::string::npos) into_decode += n;
  std::printf("pd: %s; real bytes into the decode pool %llu\n", proto::ToJson(pd)->c_str(),
              static_cast<unsigned long long>(into_decode));
  EXPECT_GT(into_decode, 0u) << "no real KV reached the decode worker: " << *proto::ToJson(after);
  // Worker to worker: the prefill worker put the blocks into the decode worker's store
  // itself (a direct put; its figures come with its heartbeats).
  uint64_t direct = 0;
  testing::WaitUntil([&] {
    direct = 0;
    const v1::ClusterState now = c.Cluster();
    for (const auto& w : now.joined_workers())
      if (w.role() == "prefill") direct += w.kv().direct_put_bytes();
    return direct > 0;
  });
  EXPECT_GT(direct, 0u) << "no direct put from the prefill worker";
}

// serve's own workers with roles (`--worker-roles prefill,decode`, in one process: the
// hand-off's KV moves between two in-process pools) and a spare slot that a `--role
// decode` worker takes later: the calls split across all three, with the reference's tokens.
TEST(JoinedCpuWorkers, LocalWorkersWithRolesAndALateDecodeWorkerAnswerAsColocated) {
  SKIP_WITHOUT_BINARY();
  const std::vector<std::string> ids = {"l1", "l2"};
  std::map<std::string, std::vector<int32_t>> want = Reference(ids);
  ASSERT_EQ(want.size(), ids.size());
  JoinedCluster c("cpu_pd_local");
  c.AddWorkerArgs("late", {"--role", "decode"});
  ASSERT_TRUE(c.Start(
      0, 4ULL << 30,
      [](serve::ServeJoinOptions* jo) {
        jo->local_workers = 2;
        jo->spare_workers = 1;
      },
      {},
      [](service::ServiceOptions* so) {
        UseCpuEngine(so, 4ULL << 20);
        so->scheduler.disaggregation = scheduler::Disaggregation::kAlways;
        so->scheduler.worker_roles = {scheduler::WorkerRole::kPrefill,
                                      scheduler::WorkerRole::kDecode};
      }));
  v1::ClusterState before = c.Cluster();
  ASSERT_EQ(before.worker_engines_size(), 3) << *proto::ToJson(before);
  EXPECT_EQ(before.worker_engines(0).role(), "prefill");
  EXPECT_EQ(before.worker_engines(1).role(), "decode");
  EXPECT_EQ(before.worker_engines(2).role(), "mixed");  // the vacant slot
  c.SpawnNew("late");
  c.WaitWorker("late", [](const v1::JoinedWorker& w) { return w.state() == "alive"; });
  std::map<std::string, std::vector<int32_t>> got = RunAgents(c, ids, false);
  for (const std::string& id : ids) EXPECT_EQ(got[id], want[id]) << id << ": tokens differ";
  const v1::ClusterState after = c.Cluster();
  EXPECT_EQ(after.worker_engines(2).role(), "decode") << "the late worker brought its role";
  EXPECT_EQ(after.disaggregation().handoffs(), 2 * ids.size()) << *proto::ToJson(after);
  EXPECT_GT(after.disaggregation().moves(), 0u) << *proto::ToJson(after);
}

// The prefill worker SIGKILLed while its hand-off's KV is on the way (the decode worker's
// store holds each put 3 s before its commit): the move fails (the order's sender is
// gone), nothing of it is read, and the call reruns on the decode worker — rebuilt from the
// token ids serve recorded — with the tokens of one colocated engine.
TEST(JoinedCpuWorkers, APrefillWorkerKilledMidTransferLeavesNothingHalfReadAndTheCallReruns) {
  SKIP_WITHOUT_BINARY();
  const std::vector<std::string> ids = {"m1"};
  std::map<std::string, std::vector<int32_t>> want = Reference(ids);
  ASSERT_EQ(want.size(), ids.size());
  JoinedCluster c("cpu_pd_kill");
  c.AddWorkerArgs("w0", {"--role", "prefill"});
  c.AddWorkerArgs("w1", {"--role", "decode", "--kv-finish-delay-ms", "3000"});
  ASSERT_TRUE(c.Start(2, 4ULL << 30, {}, {}, [](service::ServiceOptions* so) {
    UseCpuEngine(so, 4ULL << 20);
    so->scheduler.disaggregation = scheduler::Disaggregation::kAlways;
  }));
  SubmitAgents(c, ids);
  const v1::WorkflowStatus moving = c.WaitFor("m1", [](const v1::WorkflowStatus& s) {
    for (const auto& kv : s.kv())
      if (kv.context() == "main" && kv.in_flight()) return true;
    return false;
  });
  c.Kill("w0");
  c.WaitWorker("w0", [](const v1::JoinedWorker& w) { return w.state() == "lost"; });
  c.WaitFor("m1", [](const v1::WorkflowStatus& s) { return JoinedCluster::NodeDone(s, "llm-0"); });
  c.Event("m1", "bash", "TOOL_STARTED");
  c.Event("m1", "bash", "TOOL_FINISHED");
  const v1::WorkflowStatus s = c.WaitFor("m1", [](const v1::WorkflowStatus& s) {
    return s.state() == v1::WORKFLOW_COMPLETED || s.state() == v1::WORKFLOW_FAILED;
  });
  EXPECT_EQ(s.state(), v1::WORKFLOW_COMPLETED) << *proto::ToJson(s);
  const std::vector<int32_t>* log = c.token_log()->Find(scheduler::ContextKey("m1", "main"));
  ASSERT_NE(log, nullptr);
  EXPECT_EQ(*log, want["m1"]) << "tokens differ after the failed hand-off";
  const v1::ClusterState after = c.Cluster();
  EXPECT_GE(after.disaggregation().handoffs(), 1u) << *proto::ToJson(after);
  // The loss's evidence: the hand-off's move (prefill worker -> decode worker) failed, and
  // the call was placed again with its whole context to recompute.
  bool failed_move = false;
  for (const auto& loss : s.worker_losses())
    for (const auto& t : loss.transfers())
      failed_move |= t.outcome() == "failed" && t.src_tier() == "hbm" && t.dst_tier() == "hbm";
  EXPECT_TRUE(failed_move) << *proto::ToJson(s);
  int rerun = 0;
  for (const auto& d : s.decisions())
    rerun += d.kind() == "place" && d.node_id() == "llm-0" &&
             d.line().find("recompute=1201") != std::string::npos;
  EXPECT_EQ(rerun, 1) << *proto::ToJson(s);
  EXPECT_GT(moving.kv_size(), 0);
}

TEST(JoinedCpuWorkers, AWorkerWithAnotherModelIsRefusedByName) {
  SKIP_WITHOUT_BINARY();
  auto js = JoinServer::Listen("127.0.0.1:0");
  ASSERT_TRUE(js.ok()) << js.status();
  JoinOptions o;  // what serve --engine cpu --model tiny-llama-2l.json sends
  o.expect = 1;
  o.timeout = Seconds(60);
  o.max_refusals = 1;
  o.engine = "cpu";
  auto shape = cpu_engine::LoadShapeFile(ModelPath("tiny-llama-2l"));
  ASSERT_TRUE(shape.ok()) << shape.status();
  o.model = cpu_engine::ToModelConfig(*shape);
  o.kv_pool_bytes = 1ULL << 20;
  o.kv_block_tokens = 16;
  std::string log = ::testing::TempDir() + "/sy_cpu_refused.log";
  pid_t pid = testing::Spawn({Binary(), "worker", "--join", (*js)->address(), "--engine", "cpu",
                              "--model", ModelPath("tiny-llama-4l"), "--id", "other"},
                             log);
  Status st = (*js)->AwaitWorkers(o);
  EXPECT_TRUE(st.IsFailedPrecondition()) << st;
  int status = testing::Reap(pid, 30);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 3) << status;
  std::string text = testing::Slurp(log);
  EXPECT_NE(text.find("model mismatch"), std::string::npos) << text;
  EXPECT_NE(text.find("tiny-llama-4l"), std::string::npos) << text;
}

}  // namespace
}  // namespace switchyard::workers
