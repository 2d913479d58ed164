// Helpers shared by the kv_tiers tests (not a test file itself).
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/virtual_event_loop.h"
#include "kv_tiers/block_manager.h"
#include "kv_tiers/layout.h"
#include "kv_tiers/local_mover.h"
#include "kv_tiers/mover.h"
#include "kv_tiers/tier_registry.h"

namespace switchyard::kv_tiers::testing {

// Runs the loop until `done()` holds. Movers post from worker threads, so an empty queue
// may only mean "not posted yet": yield and look again (bounded; fails after 20 s).
inline bool DrainUntil(VirtualEventLoop& loop, const std::function<bool()>& done) {
  auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!done()) {
    if (loop.Run() == 0) std::this_thread::yield();
    if (std::chrono::steady_clock::now() > limit) return false;
  }
  return true;
}

// A small layout (4 KiB blocks) so tests are fast: 2 layers x 2 heads x 16 dim x 2 x 2 B
// x 16 tokens = 4096 B.
inline KvLayout SmallLayout() {
  v1::ModelConfig c;
  c.set_name("tiny");
  c.set_num_layers(2);
  c.set_num_kv_heads(2);
  c.set_head_dim(16);
  c.set_kv_dtype(v1::BF16);
  return KvLayout::FromModelConfig(c).value();
}
// The bytes of SmallLayout()'s blocks.
constexpr uint64_t kBlock = 4096;

inline std::vector<char> Pattern(uint64_t bytes, uint32_t seed) {
  std::vector<char> v(bytes);
  uint32_t x = seed * 2654435761u + 1;
  for (auto& c : v) {
    x = x * 1103515245u + 12345u;
    c = static_cast<char>(x >> 24);
  }
  return v;
}

// The movers between host-visible tiers and peer stores (local, peer, relay), with serve's
// preferences; a test adds its own beside them.
inline MoverSet HostAndPeerMovers(const MoverEnv& env) {
  MoverSet movers;
  movers.Add(std::make_shared<LocalMover>(env), 10);
  movers.Add(std::make_shared<PeerMover>(env), 5);
  movers.Add(std::make_shared<RelayMover>(env), 1);
  return movers;
}

// Whether transfer `tid` reached a final state (committed, rejected, failed, cancelled).
inline bool TransferEnded(const BlockManager& mgr, TransferId tid) {
  auto r = mgr.Transfer(tid);
  return r.ok() && r->state != v1::POSTED && r->state != v1::TRANSPORT_COMPLETE &&
         r->state != v1::VALIDATED;
}

// The `bytes` of block `id` as `reader` reads them through the commit rule (empty, and a
// test failure, when the read is refused).
inline std::vector<char> ReadBytes(BlockManager& mgr, BlockId id, const ReadRequest& reader,
                                   uint64_t bytes) {
  std::vector<char> got(bytes);
  auto lease = mgr.Read(id, reader);
  EXPECT_TRUE(lease.ok()) << lease.status();
  if (!lease.ok()) return {};
  EXPECT_TRUE(lease->CopyTo(got.data(), got.size()).ok());
  return got;
}

// A fresh directory under the test temp dir.
inline std::string TempDir(const std::string& name) {
  auto p = std::filesystem::path(::testing::TempDir()) /
           ("sy_kv_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  return p.string();
}

inline TierOptions Opts(uint64_t slots, uint64_t slot_bytes = 4096) {
  TierOptions o;
  o.capacity_bytes = slots * slot_bytes;
  o.slot_bytes = slot_bytes;
  return o;
}

inline std::unique_ptr<Tier> MakeTier(const std::string& name, TierOptions o) {
  auto t = TierRegistry::Global().CreateNamed(name, o);
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? std::move(t).value() : nullptr;
}

// Skips the calling test when implementation `name` is absent (not a CUDA build) or
// cannot run here (no device). Returns true when skipped.
inline std::string SkipReason(const std::string& name, bool is_mover) {
  bool registered = false;
  Status probe;
  if (is_mover) {
    for (const auto& m : MoverRegistry::Global().Implementations()) {
      if (m.name == name) {
        registered = true;
        probe = m.probe ? m.probe() : Status::OK();
      }
    }
  } else {
    for (const auto& t : TierRegistry::Global().Implementations()) {
      if (t.name == name) {
        registered = true;
        probe = t.probe ? t.probe() : Status::OK();
      }
    }
  }
  if (!registered) return "not a CUDA build (" + name + " is not compiled in)";
  if (!probe.ok()) return probe.message();
  return "";
}

}  // namespace switchyard::kv_tiers::testing
