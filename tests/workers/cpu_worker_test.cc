// CpuWorker: a joined worker's CPU engine — the model it loads, the runner it makes from
// serve's welcome, and the KV orders: export of a context's pool blocks into the worker's
// KV store and import of committed store blocks into another worker's pool, byte for byte;
// orders that do not match the pool or the store fail and expose nothing.
#include "workers/cpu_worker.h"

#include <gtest/gtest.h>

#include <cstring>

#include "base/virtual_event_loop.h"

namespace switchyard::workers {
namespace {

namespace kv_store = kv_store;

std::string TinyModelPath() {
  return std::string(SY_SOURCE_DIR) + "/configs/models/tiny-llama-2l.json";
}

v1::WorkerWelcome Welcome() {
  v1::WorkerWelcome w;
  w.set_kv_pool_bytes(1 << 20);
  w.set_kv_block_tokens(16);
  return w;
}

std::unique_ptr<kv_store::KvStoreServer> Store() {
  kv_store::KvStoreServerOptions wo;
  wo.listen = "127.0.0.1:0";
  wo.capacity_bytes = 1 << 20;
  wo.transport_config.params["TLS"] = "tcp";
  auto s = kv_store::KvStoreServer::Start(wo);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? std::move(*s) : nullptr;
}

struct Side {
  std::unique_ptr<CpuWorker> cpu;
  std::unique_ptr<executors::StepRunner> runner;
  cpu_engine::CpuStepRunner* pool() {
    return static_cast<cpu_engine::CpuStepRunner*>(runner.get());
  }
};

Side MakeSide(EventLoop* loop, const std::string& id) {
  Side s;
  auto cpu = CpuWorker::Load(TinyModelPath());
  EXPECT_TRUE(cpu.ok()) << cpu.status();
  s.cpu = std::move(*cpu);
  auto r = s.cpu->MakeRunner(loop, Welcome(), id);
  EXPECT_TRUE(r.ok()) << r.status();
  s.runner = std::move(*r);
  return s;
}

v1::KvStoreRef Ref(const kv_store::KvStoreServer& store) {
  v1::KvStoreRef r;
  r.set_communicator_epoch(store.communicator_epoch());
  r.set_workflow_id("t");
  r.set_context_id("hbm-w0");
  return r;
}

TEST(CpuWorker, LoadsTheModelAndRefusesAWelcomeWithoutAPool) {
  auto cpu = CpuWorker::Load(TinyModelPath());
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  EXPECT_EQ((*cpu)->model_config().name(), "tiny-llama-2l (random weights)");
  VirtualEventLoop loop;
  auto r = (*cpu)->MakeRunner(&loop, v1::WorkerWelcome(), "w");
  EXPECT_TRUE(r.status().IsInvalidArgument()) << r.status();
  auto bad = CpuWorker::Load("/nonexistent/model.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("/nonexistent/model.json"), std::string::npos)
      << bad.status();
}

// A's pool blocks go into A's store (export), B reads them from there into its own pool
// (import): B's pool then holds A's bytes and A's valid tokens.
TEST(CpuWorker, ExportThenImportCarriesAContextsBytesFromOnePoolToAnother) {
  VirtualEventLoop loop;
  Side a = MakeSide(&loop, "a"), b = MakeSide(&loop, "b");
  std::unique_ptr<kv_store::KvStoreServer> store = Store();
  ASSERT_TRUE(store);
  // A holds "wf/main": 40 tokens (3 blocks), filled with a pattern, 40 of them computed.
  a.runner->OnResize("wf/main", 40);
  auto targets = a.pool()->ImportTargets("wf/main");
  ASSERT_TRUE(targets.ok()) << targets.status();
  ASSERT_EQ(targets->size(), 3u);
  const uint64_t bpb = a.pool()->block_bytes();
  for (size_t i = 0; i < targets->size(); ++i)
    std::memset((*targets)[i], static_cast<int>(0x10 + i), bpb);
  ASSERT_TRUE(a.pool()->CommitImport("wf/main", 40).ok());

  v1::KvExport x;
  x.set_order_id(1);
  x.set_context("wf/main");
  *x.mutable_store() = Ref(*store);
  for (uint64_t i = 0; i < 3; ++i) {
    v1::KvStoreBlock* blk = x.add_blocks();
    blk->set_block_id(100 + i);
    blk->set_generation(1);
    blk->set_bytes(bpb);
  }
  v1::KvExportDone done;
  a.cpu->Export(x, store.get(), &done);
  ASSERT_EQ(done.status_code(), 0) << done.status_message();
  EXPECT_EQ(done.valid_tokens(), 40);
  EXPECT_EQ(done.tokens(), 40);
  ASSERT_EQ(done.checksums_size(), 3);
  EXPECT_EQ(done.bytes(), 3 * bpb);

  b.runner->OnResize("wf/main", 40);  // the engine's Import reserved the blocks
  v1::KvImport imp;
  imp.set_order_id(2);
  imp.set_context("wf/main");
  *imp.mutable_store() = Ref(*store);
  imp.set_valid_tokens(40);
  for (int i = 0; i < 3; ++i) {
    v1::KvStoreBlock* blk = imp.add_blocks();
    *blk = x.blocks(i);
    blk->set_checksum(done.checksums(i));
  }
  v1::KvImportDone in;
  b.cpu->Import(imp, store.get(), &in);
  ASSERT_EQ(in.status_code(), 0) << in.status_message();
  auto view = b.pool()->ExportKv("wf/main");
  ASSERT_TRUE(view.ok()) << view.status();
  EXPECT_EQ(view->valid_tokens, 40);
  for (size_t i = 0; i < 3; ++i)
    EXPECT_EQ(static_cast<const uint8_t*>(view->blocks[i])[bpb - 1], 0x10 + i) << i;

  // A checksum that is not what the store committed: nothing of it becomes readable.
  b.runner->OnResize("wf/other", 40);
  imp.set_context("wf/other");
  imp.mutable_blocks(1)->set_checksum(done.checksums(1) ^ 1);
  b.cpu->Import(imp, store.get(), &in);
  EXPECT_EQ(in.status_code(), static_cast<int>(StatusCode::kDataLoss)) << in.status_message();
  EXPECT_EQ(b.pool()->ExportKv("wf/other")->valid_tokens, 0);
}

TEST(CpuWorker, AnExportThatDoesNotMatchThePoolOrTheStoreFails) {
  VirtualEventLoop loop;
  Side a = MakeSide(&loop, "a");
  std::unique_ptr<kv_store::KvStoreServer> store = Store();
  ASSERT_TRUE(store);
  a.runner->OnResize("wf/main", 20);  // 2 blocks
  v1::KvExport x;
  x.set_context("wf/main");
  *x.mutable_store() = Ref(*store);
  x.add_blocks()->set_bytes(a.pool()->block_bytes());
  v1::KvExportDone done;
  a.cpu->Export(x, store.get(), &done);
  EXPECT_EQ(done.status_code(), static_cast<int>(StatusCode::kInvalidArgument));
  EXPECT_NE(done.status_message().find("names 1 blocks, the pool holds 2"), std::string::npos)
      << done.status_message();
  // The right count, under a communicator epoch the store does not have: refused there.
  x.add_blocks()->set_bytes(a.pool()->block_bytes());
  x.mutable_blocks(0)->set_block_id(1);
  x.mutable_blocks(1)->set_block_id(2);
  x.mutable_store()->set_communicator_epoch(store->communicator_epoch() + 1);
  a.cpu->Export(x, store.get(), &done);
  EXPECT_EQ(done.status_code(), static_cast<int>(StatusCode::kAborted)) << done.status_message();
  EXPECT_EQ(done.checksums_size(), 0);
  v1::KvExport unknown = x;
  unknown.set_context("wf/none");
  a.cpu->Export(unknown, store.get(), &done);
  EXPECT_EQ(done.status_code(), static_cast<int>(StatusCode::kNotFound));
}

}  // namespace
}  // namespace switchyard::workers
