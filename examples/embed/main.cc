// A serving stack embedding Switchyard through its C++ API (service/embedded.h), with its own
// engine (toy_engine.h): an executors::Engine computing a tiny Llama-architecture model
// (random weights: the text is meaningless) whose KV cache lives in the engine's own
// buffer, registered with Switchyard (executors::RegisteredKvPool).
//
// The agent side submits plan (800 new tokens of context "main") -> bash tool (expected to
// take 10 minutes) -> answer (extends "main"). While the tool runs, Switchyard demotes
// "main" out of the engine's memory into its host tier; when the tool ends it prefetches
// it back into freshly reserved blocks of that memory. The example checksums the context's
// blocks in its own memory when the demotion is decided (before any byte moved) and again
// when the answer is admitted (after the prefetch committed), prints both, and exits 0 only
// when they match and the workflow completed (2 on a mismatch, 1 on any other failure).
//
// Usage: embed_example DATA_DIR MODEL_SHAPE_JSON (e.g. configs/models/tiny-llama-2l.json)
#include <cstdio>
#include <deque>
#include <filesystem>
#include <string>
#include <thread>

#include "base/mutex.h"
#include "cpu_engine/cpu_engine.h"  // ToModelConfig: the model as the scheduler sees it
#include "service/embedded.h"
#include "toy_engine.h"

using namespace switchyard;  // NOLINT

namespace {

constexpr int64_t kPoolTokens = 1024;  // the engine's KV buffer: 1024 tokens

v1::ProgramNode Llm(const std::string& id, const std::string& model, const std::string& dep,
                    v1::CacheRef::Mode mode, int64_t tokens) {
  v1::ProgramNode n;
  n.set_id(id);
  n.set_kind(v1::LLM);
  n.set_model_id(model);
  if (!dep.empty()) n.add_deps(dep);
  auto* r = n.add_cache_refs();
  r->set_context("main");
  r->set_mode(mode);
  n.mutable_hints()->set_prompt_tokens(tokens);
  n.mutable_hints()->set_extend_tokens(tokens);
  n.mutable_hints()->set_max_output_tokens(8);
  return n;
}

int Fail(const std::string& what, const Status& s) {
  std::fprintf(stderr, "embed_example: %s: %s\n", what.c_str(), s.ToString().c_str());
  return 1;
}

// What this CPU is to the scheduler's estimates (rough figures; they only rank choices).
v1::GpuSpec ThisCpu() {
  v1::GpuSpec g;
  g.set_name("this cpu (rough figures)");
  g.set_hbm_bytes(1ULL << 30);
  g.set_hbm_bandwidth_bytes_per_s(1.0e10);
  g.set_bf16_flops(2.0e9);
  g.set_pcie_bandwidth_bytes_per_s(5.0e9);
  g.set_nvlink_bandwidth_bytes_per_s(5.0e9);
  g.set_nic_bandwidth_bits_per_s(1.0e10);
  g.set_compute_efficiency(0.5);
  g.set_memory_efficiency(0.5);
  return g;
}

// Commands from the scheduler's thread to the main thread.
class CommandQueue {
 public:
  void Push(service::EngineCommand c) {
    MutexLock lock(&mu_);
    q_.push_back(std::move(c));
    cv_.Signal();
  }
  std::optional<service::EngineCommand> Pop(Duration timeout) {
    MutexLock lock(&mu_);
    const auto end = std::chrono::steady_clock::now() + timeout;
    while (q_.empty() && cv_.WaitUntil(&mu_, end)) {
    }
    if (q_.empty()) return std::nullopt;
    service::EngineCommand c = std::move(q_.front());
    q_.pop_front();
    return c;
  }

 private:
  Mutex mu_;
  CondVar cv_;
  std::deque<service::EngineCommand> q_;
};

// Checksums taken on the scheduler's thread (the engine's thread).
struct Checks {
  Mutex mu;
  bool demoted = false, restored = false;
  uint64_t before = 0, after = 0;
  int64_t blocks = 0, blocks_after = 0;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: embed_example DATA_DIR MODEL_SHAPE_JSON\n");
    return 1;
  }
  const std::string dir = argv[1];
  std::filesystem::remove_all(dir);
  auto model = cpu_engine::Model::Load(argv[2]);
  if (!model.ok()) return Fail(std::string("loading ") + argv[2], model.status());
  const cpu_engine::ModelShape& shape = (*model)->shape();
  std::printf("model: %s\n", shape.Describe().c_str());
  if (shape.random_weights)
    std::printf("note: random weights, so the generated text is meaningless\n");

  toy::ToyEngine* engine = nullptr;  // made on the scheduler's thread, owned by Switchyard
  service::EmbeddedOptions options;
  options.data_dir = dir;
  options.tenant = "engine-demo";
  options.scheduler.workers = 1;
  v1::ModelConfig mc = cpu_engine::ToModelConfig(shape);
  mc.set_name(shape.name);  // the id the nodes name
  options.scheduler.model_config = mc;
  options.scheduler.gpu = ThisCpu();
  options.scheduler.hbm_bytes_per_worker = uint64_t(kPoolTokens) * shape.kv_bytes_per_token();
  options.scheduler.host_bytes = 64ULL << 20;
  options.scheduler.disk_bytes = 64ULL << 20;
  options.engine_factory =
      [&](EventLoop* loop, int worker,
          const executors::EngineLimits& limits) -> Result<driver::WorkerEngine> {
    auto runner = std::make_unique<toy::ToyRunner>(loop, model->get(), limits.pool_blocks,
                                                   limits.block_tokens);
    if (!runner->pool()) return runner->error();
    driver::WorkerEngine we;
    we.kv = runner->pool();  // the engine's own memory, registered
    auto e = std::make_unique<toy::ToyEngine>(loop, worker, limits, std::move(runner));
    engine = e.get();
    we.engine = std::move(e);
    return we;
  };
  auto sy = service::Embedded::Open(options);
  if (!sy.ok()) return Fail("opening Switchyard", sy.status());
  service::Embedded& e = **sy;
  std::printf("engine: %s, KV buffer of %lld blocks (%llu bytes each) registered\n",
              e.Cluster().model_executor().c_str(),
              static_cast<long long>(engine->pool()->num_blocks()),
              static_cast<unsigned long long>(engine->pool()->kv_block_bytes()));

  CommandQueue queue;
  Checks checks;
  const std::string ctx = "demo/main";
  e.OnCommand([&](const service::EngineCommand& c) {
    // On the scheduler's thread, before the command is carried out: the engine's memory
    // still holds the context when a demotion is decided.
    const std::string& kind = c.decision.kind();
    if (kind == "demote" && c.decision.context() == "main") {
      MutexLock lock(&checks.mu);
      checks.before = engine->Checksum(ctx, -1, &checks.blocks);
      checks.demoted = true;
    }
    if (kind == "place" && c.decision.node_id() == "answer") {  // the prefetch committed
      MutexLock lock(&checks.mu);
      checks.after = engine->Checksum(ctx, checks.blocks, &checks.blocks_after);
      checks.restored = engine->pool()->tokens(ctx) >= 0;
    }
    queue.Push(c);
  });

  v1::Workflow w;
  w.set_id("demo");
  *w.add_nodes() = Llm("plan", shape.name, "", v1::CacheRef::CREATE, 800);
  v1::ProgramNode bash;
  bash.set_id("bash");
  bash.set_kind(v1::TOOL);
  bash.set_tool_name("Bash");
  bash.add_deps("plan");
  bash.mutable_hints()->set_expected_duration_ms(600000);
  *w.add_nodes() = bash;
  *w.add_nodes() = Llm("answer", shape.name, "bash", v1::CacheRef::EXTEND, 50);
  auto id = e.Submit(w);
  if (!id.ok()) return Fail("submit", id.status());
  if (Status s = e.Close(*id); !s.ok()) return Fail("close", s);
  std::printf("submitted workflow %s (plan -> bash -> answer)\n", id->c_str());

  bool completed = false, tool_running = false;
  for (int idle = 0; idle < 300 && !completed;) {  // up to ~30 s without a command
    auto c = queue.Pop(Millis(100));
    if (!c) {
      ++idle;
      continue;
    }
    idle = 0;
    std::printf("command: %s\n", c->decision.line().c_str());
    const std::string& kind = c->decision.kind();
    v1::NodeEvent ev;
    ev.set_node_id(c->decision.node_id());
    if (kind == "admit") {  // the agent runs the tool; it ends once "main" has left
      ev.set_type(v1::TOOL_STARTED);
      if (Status s = e.Report(*id, ev); !s.ok()) return Fail("tool start", s);
      tool_running = true;
    } else if (kind == "demote" && tool_running) {
      for (int i = 0; i < 500; ++i) {  // wait for the demotion to commit
        auto st = e.Get(*id);
        if (st.ok() && st->kv_size() > 0 && !st->kv(0).in_flight() && st->kv(0).tier() != "hbm")
          break;
        std::this_thread::sleep_for(Millis(10));
      }
      ev.set_node_id("bash");
      ev.set_type(v1::TOOL_FINISHED);
      if (Status s = e.Report(*id, ev); !s.ok()) return Fail("tool end", s);
      tool_running = false;
    } else if (kind == "complete" || kind == "fail" || kind == "cancel") {
      completed = kind == "complete";
      break;
    }
  }
  auto st = e.Get(*id);
  if (!st.ok()) return Fail("status", st.status());
  std::printf("workflow %s: %s, %d decisions\n", id->c_str(),
              v1::WorkflowState_Name(st->state()).c_str(), st->decisions_size());
  bool prefetched = false;
  for (const auto& d : st->decisions()) prefetched |= d.kind() == "prefetch";
  MutexLock lock(&checks.mu);
  std::printf("KV of %s before the demotion: %lld blocks, checksum %016llx\n", ctx.c_str(),
              static_cast<long long>(checks.blocks),
              static_cast<unsigned long long>(checks.before));
  std::printf("KV of %s after the prefetch:  %lld blocks, checksum %016llx\n", ctx.c_str(),
              static_cast<long long>(checks.blocks_after),
              static_cast<unsigned long long>(checks.after));
  std::filesystem::remove_all(dir);
  if (!completed || st->state() != v1::WORKFLOW_COMPLETED) {
    std::fprintf(stderr, "embed_example: the workflow did not complete\n");
    return 1;
  }
  if (!checks.demoted || !prefetched || !checks.restored) {
    std::fprintf(stderr, "embed_example: no demotion and prefetch of %s happened\n", ctx.c_str());
    return 1;
  }
  if (checks.before != checks.after || checks.blocks != checks.blocks_after) {
    std::fprintf(stderr,
                 "embed_example: MISMATCH: the engine's memory after the prefetch "
                 "differs from before the demotion\n");
    return 2;
  }
  std::printf("checksums match: the engine's own memory was restored bit for bit\n");
  return 0;
}
