// The worker control protocol in one process: handshake, refusal of a version mismatch,
// a RemoteEngine's sequences run by a WorkerAgent's steps, and loss (closed connection,
// missed heartbeats) failing what was in flight; a stalled handshake bounded, teardown
// (Detach), sockets of retired connections closed, Close racing with itself, and an
// oversized message refused alone.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <future>
#include <iterator>
#include <map>
#include <optional>
#include <thread>

#include "base/asio_event_loop.h"
#include "base/mutex.h"
#include "driver/scheduler_driver.h"
#include "tests/workers/processes.h"
#include "workers/control_conn.h"
#include "workers/control_msgs.h"
#include "workers/join_server.h"
#include "workers/remote_engine.h"
#include "workers/worker_agent.h"

namespace switchyard::workers {
namespace {

using testing::WaitUntil;

JoinOptions Options(int expect) {
  JoinOptions o;
  o.expect = expect;
  o.timeout = Seconds(60);
  o.first_index = 2;
  o.heartbeat = Millis(200);
  o.model = driver::EmbeddedDefaultModel();
  o.gpu = driver::EmbeddedDefaultGpu();
  return o;
}

// A worker agent joining `address` on its own thread; Run() until stopped.
struct AgentThread {
  explicit AgentThread(const std::string& address, uint32_t version = 0, std::string model = "") {
    th = std::thread([this, address, version, model]() {
      AgentOptions o;
      o.join = address;
      o.worker_id = "agent-1";
      o.kv_pool_capacity_bytes = 1 << 30;
      o.protocol_version = version;
      o.model = model;
      auto a = WorkerAgent::Join(o);
      {
        MutexLock l(&mu);
        join_status = a.status();
        if (a.ok()) agent = std::move(*a);
        joined = true;
      }
      if (agent) run_status = agent->Run();
    });
  }
  ~AgentThread() { Stop(); }
  void Stop() {
    if (!th.joinable()) return;
    WaitUntil([this] { return joined.load(); });
    {
      MutexLock l(&mu);
      if (agent) agent->Stop();
    }
    th.join();
  }
  std::thread th;
  Mutex mu;
  std::atomic<bool> joined{false};
  Status join_status, run_status;
  std::unique_ptr<WorkerAgent> agent;
};

TEST(WorkerControl, HandshakeWelcomesWithIndexAndListsTheWorker) {
  auto js = JoinServer::Listen("127.0.0.1:0");
  ASSERT_TRUE(js.ok()) << js.status();
  AgentThread agent((*js)->address());
  ASSERT_TRUE((*js)->AwaitWorkers(Options(1)).ok());
  ASSERT_TRUE(WaitUntil([&] { return agent.joined.load(); }));
  ASSERT_TRUE(agent.join_status.ok()) << agent.join_status;
  EXPECT_EQ(agent.agent->welcome().worker_index(), 2);
  EXPECT_EQ(agent.agent->welcome().protocol_version(), kProtocolVersion);
  std::vector<v1::JoinedWorker> list = (*js)->Snapshot();
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0].id(), "agent-1");
  EXPECT_EQ(list[0].engine(), "simulated");
  EXPECT_EQ(list[0].state(), "alive");
  EXPECT_EQ(list[0].kv_pool_capacity_bytes(), 1u << 30);
  EXPECT_EQ(list[0].worker_index(), 2);
  EXPECT_GT(list[0].last_heartbeat_ms(), 0);
  // The control connection runs in the control class: DSCP CS6 on serve's socket, bytes
  // counted (the welcome out, the hello in).
  EXPECT_EQ(list[0].control_dscp(), kControlDscp);
  EXPECT_GT(list[0].control_bytes_sent(), 0u);
  EXPECT_GT(list[0].control_bytes_received(), 0u);
}

TEST(WorkerControl, VersionMismatchIsRefusedNamingBothVersions) {
  auto js = JoinServer::Listen("127.0.0.1:0");
  ASSERT_TRUE(js.ok()) << js.status();
  AgentThread agent((*js)->address(), 99);
  JoinOptions o = Options(1);
  o.timeout = Seconds(3);
  Status st = (*js)->AwaitWorkers(o);
  EXPECT_EQ(st.code(), StatusCode::kDeadlineExceeded) << st;
  EXPECT_NE(st.message().find("joined 0 of 1"), std::string::npos) << st;
  EXPECT_NE(st.message().find("version 99"), std::string::npos) << st;
  ASSERT_TRUE(WaitUntil([&] { return agent.joined.load(); }));
  EXPECT_TRUE(agent.join_status.IsFailedPrecondition()) << agent.join_status;
  EXPECT_NE(agent.join_status.message().find("protocol version 99"), std::string::npos);
  EXPECT_NE(agent.join_status.message().find("version " + std::to_string(kProtocolVersion)),
            std::string::npos)
      << agent.join_status;
  EXPECT_EQ((*js)->size(), 0u);
}

// A hello's role (worker --role): prefill, decode, mixed or none; anything else is refused
// by name.
TEST(WorkerControl, AHelloWithAnUnknownRoleIsRefusedNamingIt) {
  v1::WorkerHello h;
  h.set_protocol_version(kProtocolVersion);
  h.set_worker_id("w");
  h.set_engine("simulated");
  for (const char* role : {"", "mixed", "prefill", "decode"}) {
    h.set_role(role);
    EXPECT_EQ(CheckHello(h, kProtocolVersion), "") << role;
  }
  h.set_role("verifier");
  const std::string why = CheckHello(h, kProtocolVersion);
  EXPECT_NE(why.find("role 'verifier'"), std::string::npos) << why;
}

TEST(WorkerControl, AWorkerOfAnotherModelIsRefusedNamingBoth) {
  auto js = JoinServer::Listen("127.0.0.1:0");
  ASSERT_TRUE(js.ok()) << js.status();
  AgentThread other((*js)->address(), 0, "Mistral-7B");
  JoinOptions o = Options(1);
  o.served_models = {"Llama-3.1-8B", "llama"};
  o.max_refusals = 1;
  Status st = (*js)->AwaitWorkers(o);
  EXPECT_TRUE(st.IsFailedPrecondition()) << st;
  ASSERT_TRUE(WaitUntil([&] { return other.joined.load(); }));
  EXPECT_NE(other.join_status.message().find(
                "model mismatch: worker runs model 'Mistral-7B', serve serves 'Llama-3.1-8B'"),
            std::string::npos)
      << other.join_status;
  // An alias of the served model joins.
  auto js2 = JoinServer::Listen("127.0.0.1:0");
  ASSERT_TRUE(js2.ok());
  AgentThread ok((*js2)->address(), 0, "llama");
  o.max_refusals = 0;
  EXPECT_TRUE((*js2)->AwaitWorkers(o).ok());
}

// A RemoteEngine on its own loop thread, over a joined agent.
struct EngineRig {
  explicit EngineRig(RemoteWorker* rw) {
    executors::EngineLimits l;
    l.pool_blocks = 4096;
    engine = MakeRemoteEngine(&loop, 2, l, rw).engine;
    engine->SetListener([this](const executors::StepReport& r) {
      MutexLock g(&mu);
      ++steps;
      for (const auto& p : r.seqs)
        if (p.finished) finished[p.key] = p;
    });
    th = std::thread([this] { loop.Run(); });
  }
  ~EngineRig() {
    Sync([this] { engine.reset(); });
    loop.Stop();
    th.join();
  }
  void Sync(std::function<void()> fn) {
    std::atomic<bool> done{false};
    loop.Post([&] {
      fn();
      done = true;
    });
    WaitUntil([&] { return done.load(); });
  }
  Status Admit(const std::string& key, int64_t prefill, int64_t out) {
    executors::SequenceSpec s;
    s.key = key;
    s.contexts.push_back({"wf/" + key + "-ctx", 0, false});
    s.prefill_tokens = prefill;
    s.max_output_tokens = out;
    Status st;
    Sync([&] { st = engine->Admit(s); });
    return st;
  }
  std::optional<executors::SeqProgress> Finished(const std::string& key) {
    MutexLock g(&mu);
    auto it = finished.find(key);
    if (it == finished.end()) return std::nullopt;
    return it->second;
  }
  AsioEventLoop loop;
  std::unique_ptr<executors::BatchingEngine> engine;
  std::thread th;
  Mutex mu;
  int steps = 0;
  std::map<std::string, executors::SeqProgress> finished;
};

TEST(WorkerControl, RemoteEngineRunsSequencesOnTheWorkersSteps) {
  auto js = JoinServer::Listen("127.0.0.1:0");
  ASSERT_TRUE(js.ok()) << js.status();
  AgentThread agent((*js)->address());
  ASSERT_TRUE((*js)->AwaitWorkers(Options(1)).ok());
  EngineRig rig((*js)->worker(0));
  EXPECT_NE(std::string(rig.engine->name()).find("remote simulated engine (worker agent-1)"),
            std::string::npos);
  ASSERT_TRUE(rig.Admit("a", 300, 8).ok());
  ASSERT_TRUE(rig.Admit("b", 40, 3).ok());
  ASSERT_TRUE(WaitUntil([&] { return rig.Finished("a") && rig.Finished("b"); }));
  EXPECT_TRUE(rig.Finished("a")->status.ok()) << rig.Finished("a")->status;
  EXPECT_EQ(rig.Finished("a")->output_done, 8);
  EXPECT_EQ(rig.Finished("b")->output_done, 3);
  ASSERT_TRUE(WaitUntil([&] { return agent.joined.load() && agent.agent; }));
  // Every step the engine reported ran on the worker (one StepDone each).
  int steps = 0;
  rig.Sync([&] { steps = rig.steps; });
  EXPECT_GE(agent.agent->steps_run(), static_cast<uint64_t>(steps));
  EXPECT_GE(steps, 8);
}

TEST(WorkerControl, StoppedWorkerIsLostAndTheStepInFlightFails) {
  auto js = JoinServer::Listen("127.0.0.1:0");
  ASSERT_TRUE(js.ok()) << js.status();
  AgentThread agent((*js)->address());
  ASSERT_TRUE((*js)->AwaitWorkers(Options(1)).ok());
  std::atomic<int> lost_index{-1};
  (*js)->SetLossHandler([&](int index, const Status&) { lost_index = index; });
  {
    EngineRig rig((*js)->worker(0));
    ASSERT_TRUE(rig.Admit("long", 100, 1000000).ok());
    ASSERT_TRUE(WaitUntil([&] {
      int s = 0;
      rig.Sync([&] { s = rig.steps; });
      return s >= 3;
    }));
    agent.Stop();  // the worker stops: it says bye and closes
    ASSERT_TRUE(WaitUntil([&] { return rig.Finished("long").has_value(); }));
    executors::SeqProgress p = *rig.Finished("long");
    EXPECT_TRUE(p.status.IsUnavailable()) << p.status;
    EXPECT_EQ(p.status.scope(), ErrorScope::kRemote);
    EXPECT_NE(p.status.message().find("agent-1"), std::string::npos) << p.status;
    EXPECT_NE(p.status.message().find("worker left: worker agent-1 stopping"), std::string::npos)
        << p.status;
    EXPECT_EQ(lost_index.load(), 2);
    // Later steps fail at once too: nothing waits on a lost worker.
    ASSERT_TRUE(rig.Admit("after", 10, 5).ok());
    ASSERT_TRUE(WaitUntil([&] { return rig.Finished("after").has_value(); }));
    EXPECT_FALSE(rig.Finished("after")->status.ok());
  }
  std::vector<v1::JoinedWorker> list = (*js)->Snapshot();
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0].state(), "lost");
}

TEST(WorkerControl, ALossBeforeTheServiceStartsIsDeliveredLater) {
  auto js = JoinServer::Listen("127.0.0.1:0");
  ASSERT_TRUE(js.ok()) << js.status();
  AgentThread agent((*js)->address());
  ASSERT_TRUE((*js)->AwaitWorkers(Options(1)).ok());
  agent.Stop();  // gone before anyone listens for losses
  ASSERT_TRUE(WaitUntil([&] { return (*js)->Snapshot()[0].state() == "lost"; }));
  std::atomic<int> lost_index{-1};
  (*js)->SetLossHandler([&](int index, const Status&) { lost_index = index; });
  EXPECT_EQ(lost_index.load(), 2);
  // An engine made for it now fails its steps at once.
  EngineRig rig((*js)->worker(0));
  ASSERT_TRUE(rig.Admit("late", 10, 4).ok());
  ASSERT_TRUE(WaitUntil([&] { return rig.Finished("late").has_value(); }));
  EXPECT_TRUE(rig.Finished("late")->status.IsUnavailable()) << rig.Finished("late")->status;
}

// A hand-made worker's hello (`id`, `epoch`) at `address`: the connection (started, with
// heartbeats, when welcomed) and serve's answer.
struct HandWorker {
  std::unique_ptr<ControlConn> conn;
  v1::WorkerControl answer;
};
HandWorker HelloAs(const std::string& address, const std::string& id, uint64_t epoch) {
  HandWorker w;
  auto c = ControlConn::Connect(address, Seconds(30));
  EXPECT_TRUE(c.ok()) << c.status();
  if (!c.ok()) return w;
  v1::WorkerControl h;
  h.mutable_hello()->set_protocol_version(kProtocolVersion);
  h.mutable_hello()->set_worker_id(id);
  h.mutable_hello()->set_engine("simulated");
  h.mutable_hello()->set_epoch(epoch);
  EXPECT_TRUE((*c)->Send(h).ok());
  auto a = (*c)->ReadOne(Seconds(30));
  EXPECT_TRUE(a.ok()) << a.status();
  if (a.ok()) w.answer = *a;
  w.conn = std::move(*c);
  if (w.answer.has_welcome())
    w.conn->Start([](const v1::WorkerControl&) {}, [](const Status&) {}, Millis(100), 1000);
  return w;
}

// After the start, only a lost member may come back, with a larger epoch, under its own
// index; an alive member's id, a stale epoch and a stranger are refused by name.
TEST(WorkerControl, ALostMemberRejoinsUnderItsIndexWithALargerEpoch) {
  auto js = JoinServer::Listen("127.0.0.1:0");
  ASSERT_TRUE(js.ok()) << js.status();
  HandWorker first;
  std::thread client([&] { first = HelloAs((*js)->address(), "w", 10); });
  JoinOptions o = Options(1);
  o.heartbeat = Millis(100);
  ASSERT_TRUE((*js)->AwaitWorkers(o).ok());
  client.join();
  ASSERT_TRUE(first.answer.has_welcome());
  std::atomic<int> rejoined{-1};
  (*js)->SetRejoinHandler([&](int index) { rejoined = index; });
  auto refused = [&](uint64_t epoch, const std::string& id) {
    HandWorker w = HelloAs((*js)->address(), id, epoch);
    EXPECT_TRUE(w.answer.has_refusal()) << id << " " << epoch;
    return w.answer.refusal().reason();
  };
  EXPECT_NE(refused(1, "stranger").find("worker id 'stranger' is not a member"), std::string::npos);
  EXPECT_NE(refused(11, "w").find("worker id 'w' already joined"), std::string::npos);
  first.conn->Close();
  ASSERT_TRUE(WaitUntil([&] { return (*js)->Snapshot()[0].state() == "lost"; }));
  EXPECT_NE(refused(10, "w").find("epoch 10, not after its lost incarnation's epoch 10"),
            std::string::npos);
  HandWorker again = HelloAs((*js)->address(), "w", 12);
  ASSERT_TRUE(again.answer.has_welcome()) << again.answer.DebugString();
  EXPECT_EQ(again.answer.welcome().worker_index(), 2);
  ASSERT_TRUE(WaitUntil([&] { return rejoined.load() == 2; }));
  v1::JoinedWorker listed = (*js)->Snapshot()[0];
  EXPECT_EQ(listed.state(), "alive");
  EXPECT_EQ(listed.epoch(), 12u);
  EXPECT_EQ(listed.joins(), 2u);
  EXPECT_NE(listed.lost_reason().find("lost"), std::string::npos) << "the last loss's reason";
  EXPECT_EQ((*js)->size(), 1u);
  // Lost again: the new incarnation's loss is delivered once, as the first's was. Its
  // connection can deliver nothing more once serve retired it: a third incarnation's rejoin
  // closes it (joining its threads: the reader and the heartbeat watch) before the rejoin
  // handler runs.
  std::atomic<int> losses{0};
  (*js)->SetLossHandler([&](int, const Status&) { ++losses; });
  again.conn->Close();
  ASSERT_TRUE(WaitUntil([&] { return (*js)->Snapshot()[0].state() == "lost"; }));
  rejoined = -1;
  HandWorker third = HelloAs((*js)->address(), "w", 13);
  ASSERT_TRUE(third.answer.has_welcome()) << third.answer.DebugString();
  ASSERT_TRUE(WaitUntil([&] { return rejoined.load() == 2; }));
  EXPECT_EQ(losses.load(), 1);
  (*js)->SetLossHandler({});  // points at this test's locals
  (*js)->SetRejoinHandler({});
}

// A worker with a new id takes the place of a lost member (the lowest lost index), with
// no epoch rule (another process, perhaps on another host); with no member lost, a
// stranger is refused, and so is the replaced member's own id when it comes back.
TEST(WorkerControl, ANewWorkerTakesTheIndexOfALostMember) {
  auto js = JoinServer::Listen("127.0.0.1:0");
  ASSERT_TRUE(js.ok()) << js.status();
  HandWorker a, b;
  std::thread client([&] {
    a = HelloAs((*js)->address(), "a", 100);
    b = HelloAs((*js)->address(), "b", 100);
  });
  JoinOptions o = Options(2);
  o.heartbeat = Millis(100);
  ASSERT_TRUE((*js)->AwaitWorkers(o).ok());
  client.join();
  ASSERT_TRUE(b.answer.has_welcome());
  EXPECT_EQ(b.answer.welcome().worker_index(), 3);
  std::atomic<int> rejoined{-1};
  (*js)->SetRejoinHandler([&](int index) { rejoined = index; });
  auto refusal = [&](const std::string& id, uint64_t epoch) {
    HandWorker w = HelloAs((*js)->address(), id, epoch);
    EXPECT_TRUE(w.answer.has_refusal()) << id;
    return w.answer.refusal().reason();
  };
  EXPECT_NE(refusal("c", 1).find("not a member, and no member is lost"), std::string::npos);
  b.conn->Close();
  ASSERT_TRUE(WaitUntil([&] { return (*js)->Snapshot()[1].state() == "lost"; }));
  HandWorker c = HelloAs((*js)->address(), "c", 1);  // an epoch below b's: no matter
  ASSERT_TRUE(c.answer.has_welcome()) << c.answer.DebugString();
  EXPECT_EQ(c.answer.welcome().worker_index(), 3);
  ASSERT_TRUE(WaitUntil([&] { return rejoined.load() == 3; }));
  EXPECT_EQ((*js)->size(), 2u);
  v1::JoinedWorker listed = (*js)->Snapshot()[1];
  EXPECT_EQ(listed.id(), "c");
  EXPECT_EQ(listed.state(), "alive");
  EXPECT_EQ((*js)->Find("b"), nullptr);
  EXPECT_EQ((*js)->Find("c"), (*js)->worker(1));
  EXPECT_NE(refusal("b", 200).find("worker id 'b' is not a member"), std::string::npos);
  EXPECT_EQ((*js)->Snapshot()[0].id(), "a");
  EXPECT_EQ((*js)->Snapshot()[0].state(), "alive");
}

// Spare slots: members with no worker, listed vacant and lost to the scheduler (the loss
// handler hears of each), that new worker ids take in index order; with none left a new id
// is refused by name.
TEST(WorkerControl, NewWorkersTakeTheSpareSlotsInIndexOrder) {
  auto js = JoinServer::Listen("127.0.0.1:0");
  ASSERT_TRUE(js.ok()) << js.status();
  HandWorker a;
  std::thread client([&] { a = HelloAs((*js)->address(), "a", 100); });
  ASSERT_TRUE((*js)->AwaitWorkers(Options(1)).ok());
  client.join();
  (*js)->AddSpareSlots(2, 3);
  ASSERT_EQ((*js)->size(), 3u);
  std::vector<v1::JoinedWorker> list = (*js)->Snapshot();
  EXPECT_EQ(list[1].state(), "vacant");
  EXPECT_EQ(list[2].worker_index(), 4);
  std::vector<int> lost;
  (*js)->SetLossHandler([&](int index, const Status&) { lost.push_back(index); });
  EXPECT_EQ(lost, (std::vector<int>{3, 4})) << "the scheduler places nothing on a vacant slot";
  EXPECT_TRUE((*js)->worker(1)->Send(v1::WorkerControl()).IsUnavailable());
  std::atomic<int> joined{-1};
  (*js)->SetRejoinHandler([&](int index) { joined = index; });
  HandWorker b = HelloAs((*js)->address(), "b", 1);
  ASSERT_TRUE(b.answer.has_welcome()) << b.answer.DebugString();
  EXPECT_EQ(b.answer.welcome().worker_index(), 3);
  ASSERT_TRUE(WaitUntil([&] { return joined.load() == 3; }));
  HandWorker c = HelloAs((*js)->address(), "c", 1);
  ASSERT_TRUE(c.answer.has_welcome()) << c.answer.DebugString();
  EXPECT_EQ(c.answer.welcome().worker_index(), 4);
  ASSERT_TRUE(WaitUntil([&] { return joined.load() == 4; }));  // the welcome goes first
  list = (*js)->Snapshot();
  EXPECT_EQ(list[1].id(), "b");
  EXPECT_EQ(list[1].state(), "alive");
  EXPECT_EQ(list[2].id(), "c");
  HandWorker d = HelloAs((*js)->address(), "d", 1);
  ASSERT_TRUE(d.answer.has_refusal());
  EXPECT_NE(d.answer.refusal().reason().find("no spare slot is free"), std::string::npos)
      << d.answer.refusal().reason();
  // The handlers point at this test's locals: gone before the workers' connections end.
  (*js)->SetLossHandler({});
  (*js)->SetRejoinHandler({});
}

// An engine made for a worker before its loss takes steps again once it rejoins.
TEST(WorkerControl, AnEngineTakesStepsAgainAfterItsWorkerRejoins) {
  auto js = JoinServer::Listen("127.0.0.1:0");
  ASSERT_TRUE(js.ok()) << js.status();
  auto agent = std::make_unique<AgentThread>((*js)->address());
  ASSERT_TRUE((*js)->AwaitWorkers(Options(1)).ok());
  EngineRig rig((*js)->worker(0));
  ASSERT_TRUE(rig.Admit("before", 50, 3).ok());
  ASSERT_TRUE(WaitUntil([&] { return rig.Finished("before").has_value(); }));
  EXPECT_TRUE(rig.Finished("before")->status.ok());
  agent->Stop();
  ASSERT_TRUE(WaitUntil([&] { return (*js)->Snapshot()[0].state() == "lost"; }));
  ASSERT_TRUE(rig.Admit("while-lost", 10, 2).ok());
  ASSERT_TRUE(WaitUntil([&] { return rig.Finished("while-lost").has_value(); }));
  EXPECT_TRUE(rig.Finished("while-lost")->status.IsUnavailable());
  // The restarted agent's epoch is its start's wall-clock time (ms): once the clock has
  // passed the lost incarnation's, it is a later one.
  const uint64_t lost_epoch = (*js)->Snapshot()[0].epoch();
  ASSERT_TRUE(WaitUntil([&] { return static_cast<uint64_t>(UnixMillis()) > lost_epoch; }));
  std::atomic<bool> rejoined{false};  // called after the engine heard of the rejoin
  (*js)->SetRejoinHandler([&](int) { rejoined = true; });
  agent = std::make_unique<AgentThread>((*js)->address());  // the same id, restarted
  ASSERT_TRUE(WaitUntil([&] { return rejoined.load(); }));
  EXPECT_EQ((*js)->Snapshot()[0].joins(), 2u);
  ASSERT_TRUE(WaitUntil([&] { return agent->joined.load(); }));
  ASSERT_TRUE(agent->join_status.ok()) << agent->join_status;
  EXPECT_EQ(agent->agent->welcome().worker_index(), 2);
  ASSERT_TRUE(rig.Admit("after", 50, 4).ok());
  ASSERT_TRUE(WaitUntil([&] { return rig.Finished("after").has_value(); }));
  EXPECT_TRUE(rig.Finished("after")->status.ok()) << rig.Finished("after")->status;
  EXPECT_EQ(rig.Finished("after")->output_done, 4);
}

TEST(WorkerControl, SilentWorkerIsLostAfterMissedHeartbeats) {
  auto js = JoinServer::Listen("127.0.0.1:0");
  ASSERT_TRUE(js.ok()) << js.status();
  // A hand-made worker: hello, then silence (no heartbeats).
  std::unique_ptr<ControlConn> raw;
  std::thread client([&] {
    auto c = ControlConn::Connect((*js)->address(), Seconds(30));
    ASSERT_TRUE(c.ok()) << c.status();
    v1::WorkerControl h;
    h.mutable_hello()->set_protocol_version(kProtocolVersion);
    h.mutable_hello()->set_worker_id("silent");
    h.mutable_hello()->set_engine("simulated");
    ASSERT_TRUE((*c)->Send(h).ok());
    auto w = (*c)->ReadOne(Seconds(30));
    ASSERT_TRUE(w.ok() && w->has_welcome());
    raw = std::move(*c);
  });
  JoinOptions o = Options(1);
  o.heartbeat = Millis(100);
  ASSERT_TRUE((*js)->AwaitWorkers(o).ok());
  client.join();
  Mutex mu;
  std::string why;
  (*js)->SetLossHandler([&](int, const Status& st) {
    MutexLock l(&mu);
    why = st.message();
  });
  ASSERT_TRUE(WaitUntil([&] { return (*js)->Snapshot()[0].state() == "lost"; }));
  MutexLock l(&mu);
  EXPECT_NE(why.find("missed heartbeats"), std::string::npos) << why;
  EXPECT_NE(why.find("silent"), std::string::npos) << why;
}

TEST(WorkerControl, OversizedFrameEndsTheConnection) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  ControlConn conn(sv[0], "pair");
  unsigned char hdr[4] = {0xff, 0xff, 0xff, 0xff};
  ASSERT_EQ(::write(sv[1], hdr, 4), 4);
  auto m = conn.ReadOne(Seconds(10));
  EXPECT_TRUE(m.status().IsDataLoss()) << m.status();
  ::close(sv[1]);
}

TEST(WorkerControl, SendNeverBlocksOnAPeerThatDoesNotRead) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  auto conn = std::make_unique<ControlConn>(sv[0], "pair");
  conn->Start([](const v1::WorkerControl&) {}, [](const Status&) {}, Seconds(30), 3);
  // 16 MiB of frames: far more than the socket buffers hold while sv[1] is never read.
  v1::WorkerControl m;
  m.mutable_seq_leave()->set_seq(std::string(64 << 10, 'x'));
  std::atomic<bool> sent{false};
  std::thread sender([&] {
    for (int i = 0; i < 256; ++i) EXPECT_TRUE(conn->Send(m).ok());
    sent = true;
  });
  EXPECT_TRUE(WaitUntil([&] { return sent.load(); }, 60)) << "Send blocked on the peer";
  conn->Close();  // unblocks the writer if it still waits on the socket
  sender.join();
  EXPECT_FALSE(conn->Send(m).ok());  // closed
  conn.reset();
  ::close(sv[1]);
}

TEST(WorkerControl, StepRunnerCallsSurviveTheWire) {
  executors::SequenceSpec spec;
  spec.key = "wf/n1";
  spec.contexts = {{"wf/main", 120, true}, {"wf/side", 30, false}};
  spec.extends_primary = true;
  spec.prefill_tokens = 70;
  spec.output_done = 2;
  spec.max_output_tokens = 64;
  spec.prompt_token_ids = {5, 6, 7};
  spec.temperature = 0.5;
  spec.sampling_seed = 42;
  spec.token_mask = 1;
  spec.json_schema = R"({"type":"object","required":["path"]})";
  v1::SeqAdmit a;
  ToAdmit(spec, "wf/main", 150, &a);
  v1::SeqAdmit parsed;
  ASSERT_TRUE(parsed.ParseFromString(a.SerializeAsString()));
  executors::SequenceSpec back = FromAdmit(parsed);
  EXPECT_EQ(parsed.primary(), "wf/main");
  EXPECT_EQ(parsed.fresh_from(), 150);
  EXPECT_EQ(back.key, spec.key);
  ASSERT_EQ(back.contexts.size(), 2u);
  EXPECT_EQ(back.contexts[1].key, "wf/side");
  EXPECT_EQ(back.contexts[1].tokens, 30);
  EXPECT_FALSE(back.contexts[1].resident);
  EXPECT_EQ(back.prefill_tokens, 70);
  EXPECT_EQ(back.output_done, 2);
  EXPECT_EQ(back.max_output_tokens, 64);
  EXPECT_EQ(back.prompt_token_ids, spec.prompt_token_ids);
  EXPECT_EQ(back.temperature, 0.5);
  EXPECT_EQ(back.sampling_seed, 42u);
  EXPECT_EQ(back.token_mask, 1);
  EXPECT_EQ(back.json_schema, spec.json_schema);

  std::string seq = "wf/n1", primary = "wf/main", side = "wf/side";
  executors::StepItem item;
  item.seq = &seq;
  item.primary = &primary;
  item.spans = {{&side, 0, 30}, {&primary, 120, 160}};
  item.emits = true;
  item.emit_position = 160;
  executors::StepShape shape;
  shape.prefill_tokens = 70;
  shape.prefill_attention = 1234.5;
  shape.decode_seqs = 3;
  shape.kv_tokens_read = 999;
  v1::RunStep rs;
  ToRunStep(7, shape, {item}, &rs);
  std::deque<std::string> strings;
  std::vector<executors::StepItem> items = ItemsOf(rs, &strings);
  executors::StepShape sh = ShapeOf(rs);
  EXPECT_EQ(rs.step_id(), 7u);
  EXPECT_EQ(sh.prefill_tokens, 70);
  EXPECT_EQ(sh.prefill_attention, 1234.5);
  EXPECT_EQ(sh.decode_seqs, 3);
  EXPECT_EQ(sh.kv_tokens_read, 999);
  ASSERT_EQ(items.size(), 1u);
  EXPECT_EQ(*items[0].seq, seq);
  ASSERT_EQ(items[0].spans.size(), 2u);
  EXPECT_EQ(*items[0].spans[1].context, primary);
  EXPECT_EQ(items[0].spans[1].from, 120);
  EXPECT_EQ(items[0].spans[1].to, 160);
  EXPECT_TRUE(items[0].emits);
  EXPECT_EQ(items[0].emit_position, 160);

  items[0].token = 11;
  items[0].eos = true;
  items[0].status = Status::ResourceExhausted("pool");
  v1::ControlItemResult r;
  ToItemResult(items[0], &r);
  executors::StepItem got;
  FromItemResult(r, &got);
  EXPECT_EQ(got.token, 11);
  EXPECT_TRUE(got.eos);
  EXPECT_TRUE(got.status.IsResourceExhausted()) << got.status;
  EXPECT_NE(got.status.message().find("pool"), std::string::npos);
  r.set_status_code(9999);  // a code this build does not know
  FromItemResult(r, &got);
  EXPECT_EQ(got.status.code(), StatusCode::kInternal);
  r.set_status_code(0);
  FromItemResult(r, &got);
  EXPECT_TRUE(got.status.ok());
}

// A raw TCP connection to `address` (HOST:PORT) that the test writes by hand (-1: none).
int RawConnect(const std::string& address) {
  std::string host;
  uint16_t port = 0;
  if (!SplitHostPort(address, &host, &port).ok()) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  ::inet_pton(AF_INET, host.c_str(), &a.sin_addr);
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0) return fd;
  if (fd >= 0) ::close(fd);
  return -1;
}

// A peer that announces a frame (its 4 length bytes) and stalls.
int StalledPeer(const std::string& address) {
  int fd = RawConnect(address);
  const unsigned char hdr[4] = {0, 0, 0, 64};
  if (fd >= 0 && ::write(fd, hdr, 4) != 4) {
    ::close(fd);
    return -1;
  }
  return fd;
}

TEST(WorkerControl, ReadOneFailsAFrameThatStallsPartWay) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  ControlConn conn(sv[0], "pair");
  const unsigned char hdr[4] = {0, 0, 0, 100};  // 100 bytes announced, none sent
  ASSERT_EQ(::write(sv[1], hdr, 4), 4);
  auto m = conn.ReadOne(Millis(300));  // returns: the stalled body did not hold it
  EXPECT_EQ(m.status().code(), StatusCode::kDeadlineExceeded) << m.status();
  EXPECT_NE(m.status().message().find("frame body: 0 of 100 bytes"), std::string::npos)
      << m.status();
  ::close(sv[1]);
}

// A peer that connects, sends a frame's length and stalls holds the listener for the
// handshake timeout at most: the next hello is welcomed.
TEST(WorkerControl, AStalledHandshakeDoesNotBlockTheNextHello) {
  auto js = JoinServer::Listen("127.0.0.1:0");
  ASSERT_TRUE(js.ok()) << js.status();
  const std::string address = (*js)->address();
  int stalled = StalledPeer(address);
  ASSERT_GE(stalled, 0);
  JoinOptions o = Options(1);
  o.handshake_timeout = Millis(500);
  std::future<Status> awaited =
      std::async(std::launch::async, [&] { return (*js)->AwaitWorkers(o); });
  // The stalled peer, the only connection yet, is accepted first: the server is in its
  // handshake (or, past the handshake timeout, has refused it) before the hello connects.
  ASSERT_TRUE(WaitUntil([&] { return (*js)->handshaking() || !(*js)->refusals().empty(); }));
  HandWorker w = HelloAs(address, "w", 1);
  Status st = awaited.get();
  ASSERT_TRUE(st.ok()) << st;
  EXPECT_TRUE(w.answer.has_welcome()) << w.answer.DebugString();
  std::vector<std::string> refusals = (*js)->refusals();
  ASSERT_EQ(refusals.size(), 1u);
  EXPECT_NE(refusals[0].find("no whole control message"), std::string::npos) << refusals[0];
  ::close(stalled);
}

TEST(WorkerControl, AwaitWorkersKeepsItsDeadlineAgainstAStalledPeer) {
  auto js = JoinServer::Listen("127.0.0.1:0");
  ASSERT_TRUE(js.ok()) << js.status();
  int stalled = StalledPeer((*js)->address());
  ASSERT_GE(stalled, 0);
  JoinOptions o = Options(1);
  o.timeout = Seconds(1);
  o.handshake_timeout = Seconds(3600);  // a wait for it would outlast the test's timeout
  Status st = (*js)->AwaitWorkers(o);   // returns: its own deadline cut the handshake short
  EXPECT_EQ(st.code(), StatusCode::kDeadlineExceeded) << st;
  EXPECT_NE(st.message().find("joined 0 of 1"), std::string::npos) << st;
  ::close(stalled);
}

// A join server whose one member, hand-made worker "w" (epoch `epoch`), joined; `w` gets
// its connection. Null (with a failure recorded) if the join did not happen.
std::unique_ptr<JoinServer> ServerWithOneMember(HandWorker* w, uint64_t epoch = 1,
                                                JoinOptions options = Options(1)) {
  auto js = JoinServer::Listen("127.0.0.1:0");
  EXPECT_TRUE(js.ok()) << js.status();
  if (!js.ok()) return nullptr;
  std::thread client([&] { *w = HelloAs((*js)->address(), "w", epoch); });
  Status st = (*js)->AwaitWorkers(options);
  client.join();
  EXPECT_TRUE(st.ok()) << st;
  return st.ok() ? std::move(*js) : nullptr;
}

// A stalled peer in the rejoin loop's handshake does not hold the server's teardown: with
// a handshake timeout of an hour, the teardown returns (waiting for the timeout, it would
// outlast the test's own timeout and fail it).
TEST(WorkerControl, TheServerGoesPromptlyWhileAHandshakeStalls) {
  HandWorker w;
  JoinOptions o = Options(1);
  o.handshake_timeout = Seconds(3600);
  std::unique_ptr<JoinServer> js = ServerWithOneMember(&w, 1, o);
  ASSERT_TRUE(js);
  w.conn->Close();  // lost: the bye at teardown waits for no one
  ASSERT_TRUE(WaitUntil([&] { return js->Snapshot()[0].state() == "lost"; }));
  int stalled = StalledPeer(js->address());
  ASSERT_GE(stalled, 0);
  ASSERT_TRUE(WaitUntil([&] { return js->handshaking(); }));  // the stalled peer's
  js.reset();
  ::close(stalled);
}

// Detach (serve's service is going): the rejoin loop ends, the handlers go and the detach
// hooks run, once; a lost member's hello is no longer answered.
TEST(WorkerControl, DetachEndsRejoinsAndHandlersThenRunsItsHooksOnce) {
  HandWorker w;
  std::unique_ptr<JoinServer> server = ServerWithOneMember(&w);
  ASSERT_TRUE(server);
  std::atomic<int> rejoins{0}, losses{0}, hooks{0};
  server->SetRejoinHandler([&](int) { ++rejoins; });
  server->SetLossHandler([&](int, const Status&) { ++losses; });
  server->AddDetachHook([&] { ++hooks; });
  w.conn->Close();
  ASSERT_TRUE(WaitUntil([&] { return server->Snapshot()[0].state() == "lost"; }));
  EXPECT_EQ(losses.load(), 1);
  server->Detach();
  EXPECT_EQ(hooks.load(), 1);
  server->Detach();
  EXPECT_EQ(hooks.load(), 1);
  server->AddDetachHook([&] { ++hooks; });  // after Detach: at once
  EXPECT_EQ(hooks.load(), 2);
  auto c = ControlConn::Connect(server->address(), Seconds(10));
  ASSERT_TRUE(c.ok()) << c.status();
  v1::WorkerControl h;
  h.mutable_hello()->set_protocol_version(kProtocolVersion);
  h.mutable_hello()->set_worker_id("w");
  h.mutable_hello()->set_engine("simulated");
  h.mutable_hello()->set_epoch(2);
  ASSERT_TRUE((*c)->Send(h).ok());
  // Nothing reads the hello (Detach joined the rejoin loop). The server going proves it:
  // the connection then ends, and an answer would have come before its end.
  EXPECT_EQ(rejoins.load(), 0);
  EXPECT_EQ(server->Snapshot()[0].state(), "lost");
  server.reset();
  auto answer = (*c)->ReadOne(Seconds(60));
  EXPECT_FALSE(answer.ok()) << "the hello was answered: " << answer->DebugString();
  EXPECT_NE(answer.status().code(), StatusCode::kDeadlineExceeded) << answer.status();
}

// WorkerJoined's guard: IfAlive runs its function only while the worker is not lost.
TEST(WorkerControl, IfAliveRunsOnlyWhileTheWorkerIsAlive) {
  HandWorker w;
  std::unique_ptr<JoinServer> js = ServerWithOneMember(&w, 7);
  ASSERT_TRUE(js);
  uint64_t epoch = 0;
  EXPECT_TRUE(js->worker(0)->IfAlive([&](const v1::WorkerHello& h) { epoch = h.epoch(); }));
  EXPECT_EQ(epoch, 7u);
  w.conn->Close();
  ASSERT_TRUE(WaitUntil([&] { return js->worker(0)->lost(); }));
  bool ran = false;
  EXPECT_FALSE(js->worker(0)->IfAlive([&](const v1::WorkerHello&) { ran = true; }));
  EXPECT_FALSE(ran);
}

size_t OpenDescriptors() {
  return static_cast<size_t>(std::distance(std::filesystem::directory_iterator("/proc/self/fd"),
                                           std::filesystem::directory_iterator()));
}

// Each rejoin retires the lost incarnation's connection: its socket is closed then, not
// kept until serve stops (a crash-looping worker would exhaust the descriptors).
TEST(WorkerControl, RejoinsDoNotKeepTheLostConnectionsSockets) {
  auto js = JoinServer::Listen("127.0.0.1:0");
  ASSERT_TRUE(js.ok()) << js.status();
  HandWorker w;
  std::thread client([&] { w = HelloAs((*js)->address(), "w", 10); });
  JoinOptions o = Options(1);
  o.heartbeat = Millis(100);
  ASSERT_TRUE((*js)->AwaitWorkers(o).ok());
  client.join();
  const size_t before = OpenDescriptors();
  for (uint64_t epoch = 11; epoch <= 18; ++epoch) {
    w.conn.reset();  // closes: the worker is lost
    ASSERT_TRUE(WaitUntil([&] { return (*js)->Snapshot()[0].state() == "lost"; }));
    w = HelloAs((*js)->address(), "w", epoch);
    ASSERT_TRUE(w.answer.has_welcome()) << w.answer.DebugString();
    ASSERT_TRUE(WaitUntil([&] { return (*js)->Snapshot()[0].state() == "alive"; }));
  }
  EXPECT_EQ((*js)->Snapshot()[0].joins(), 9u);
  EXPECT_LE(OpenDescriptors(), before + 2) << "8 rejoins";
}

// Close from several threads at once, and from the connection's own thread (its loss
// callback), joins each thread once (no std::terminate) and returns.
TEST(WorkerControl, CloseRacesWithItselfAndWithTheLossCallback) {
  for (int i = 0; i < 50; ++i) {
    int sv[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    auto conn = std::make_unique<ControlConn>(sv[0], "pair");
    ControlConn* c = conn.get();
    conn->Start([](const v1::WorkerControl&) {}, [c](const Status&) { c->Close(); }, Seconds(30),
                3);
    if (i % 2 == 1) ::shutdown(sv[1], SHUT_RDWR);  // the peer goes: on_lost closes too
    std::thread a([c] { c->Close(); });
    std::thread b([c] { c->Close(); });
    c->Close();
    a.join();
    b.join();
    EXPECT_FALSE(c->Send(v1::WorkerControl()).ok());
    conn.reset();
    ::close(sv[1]);
  }
}

// A message over the frame limit fails alone (named, nothing sent); the connection stays
// and carries the next one.
TEST(WorkerControl, AnOversizedMessageIsRefusedAndTheConnectionStays) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  Mutex mu;  // (before the connections: their threads use these until they go)
  std::vector<std::string> got;
  std::atomic<bool> lost{false};
  ControlConn conn(sv[0], "pair"), peer(sv[1], "peer");
  peer.Start(
      [&](const v1::WorkerControl& m) {
        MutexLock l(&mu);
        if (m.has_seq_leave()) got.push_back(m.seq_leave().seq());
      },
      [&](const Status&) { lost = true; }, Seconds(30), 3);
  conn.Start([](const v1::WorkerControl&) {}, [&](const Status&) { lost = true; }, Seconds(30), 3);
  v1::WorkerControl big;
  big.mutable_seq_leave()->set_seq(std::string(kMaxFrameBytes, 'x'));  // plus the field's tag
  const size_t size = big.ByteSizeLong();
  Status st = conn.Send(big);
  EXPECT_TRUE(st.IsInvalidArgument()) << st;
  EXPECT_NE(st.message().find(std::to_string(size) + " bytes"), std::string::npos) << st;
  EXPECT_NE(st.message().find(std::to_string(kMaxFrameBytes)), std::string::npos) << st;
  EXPECT_FALSE(conn.lost());
  v1::WorkerControl small;
  small.mutable_seq_leave()->set_seq("small");
  ASSERT_TRUE(conn.Send(small).ok());
  ASSERT_TRUE(WaitUntil([&] {
    MutexLock l(&mu);
    return !got.empty();
  }));
  MutexLock l(&mu);
  EXPECT_EQ(got, (std::vector<std::string>{"small"}));
  EXPECT_FALSE(lost.load());
}

}  // namespace
}  // namespace switchyard::workers
