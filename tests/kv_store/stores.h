// Test helper: KvStoreServers (KV stores) in this process over TCP loopback (UCX_TLS=tcp),
// each on its own thread, and how serve's tier of one names it (transport/
// direct_order.h StoreRef), and the sizes and byte patterns the tests put. Header-only; for
// the direct put and credit tests.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "kv_store/direct_order.h"
#include "kv_store/kv_store_client.h"
#include "kv_store/kv_store_server.h"

namespace switchyard::kv_store::testing {

constexpr uint64_t kKiB = 1024;
constexpr uint64_t kMiB = 1024 * kKiB;

// n bytes that differ with `seed` and along the buffer (a misplaced block shows).
inline std::vector<uint8_t> Pattern(size_t n, uint32_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 131 + seed * 7 + (i >> 9));
  return v;
}

inline transport::TransportConfig Tcp() {
  transport::TransportConfig c;
  c.params["TLS"] = "tcp";
  return c;
}

inline KvStoreClientOptions TcpClient() {
  KvStoreClientOptions o;
  o.transport_config = Tcp();
  o.ack_timeout = std::chrono::seconds(30);
  return o;
}

// A KvStoreServer of `capacity` bytes (TCP; `o`'s credit and delays) on its own thread.
struct Store {
  explicit Store(KvStoreServerOptions o = {}, uint64_t capacity = 64ull << 20) {
    o.transport_config = Tcp();
    o.capacity_bytes = capacity;
    auto w = KvStoreServer::Start(o);
    EXPECT_TRUE(w.ok()) << w.status();
    if (!w.ok()) return;
    worker = std::move(*w);
    thread = std::thread([this] { worker->Run(); });
  }
  ~Store() {
    if (worker) worker->Stop();
    if (thread.joinable()) thread.join();
  }
  const std::string& address() const { return worker->address(); }
  // This store as serve's tier of it names it: owner ("t", `context`), its epochs.
  StoreRef Ref(const std::string& context) const {
    StoreRef r;
    r.address = worker->address();
    r.transport_config = Tcp();
    r.communicator_epoch = worker->communicator_epoch();
    r.workflow_id = "t";
    r.context_id = context;
    return r;
  }
  std::unique_ptr<KvStoreServer> worker;
  std::thread thread;
};

}  // namespace switchyard::kv_store::testing
