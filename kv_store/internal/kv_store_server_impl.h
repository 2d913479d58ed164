// Internal parts of KvStoreServer, shared by kv_store_server.cc (start, stats, local
// commits) and kv_store_server_loop.cc (the worker loop): the pending transfers, the
// staging buffer pool, the put verifier and the server's state (KvStoreServer::Impl).
// Not a public interface: only those two files include it.
//
// Thread-safety: BufferPool and Verifier are thread-safe; Impl's members are the loop
// thread's except those marked GUARDED_BY (the verifier thread sends and counts too).
#pragma once

#include <algorithm>
#include <deque>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <thread>
#include <vector>

#include "base/mutex.h"
#include "kv_store/kv_store_protocol.h"
#include "kv_store/kv_store_server.h"

namespace switchyard::kv_store::internal {

constexpr uint64_t kDiscardBytes = 64;

// A put being received: its header arrived, its data is on the way (or being discarded).
struct IncomingPut {
  BlockHeader header;
  transport::EndpointId sender = 0;
  SharedBuffer buffer;                       // declared before `recv`: outlives the receive
  RejectReason early = RejectReason::kNone;  // rejected at header time: data discarded
  std::string early_message;                 // why (a credit refusal names the limit)
  bool reserved = false;
  bool charged = false;  // header.length charged to the sender's receiver credit
  transport::TransferHandle recv;
};

struct PendingProbe {
  transport::EndpointId sender = 0;
  uint64_t transfer_id = 0;
  SharedBuffer buffer;
  transport::TransferHandle recv;
};

struct PendingSend {
  std::shared_ptr<void> keep;  // source bytes pinned until the send completes
  transport::TransferHandle send;
};

// Staging buffers for received data, recycled: a buffer whose last reference goes (a
// superseded, freed or dropped block, a rejected put, a probe) is kept for the next
// receive of the same size instead of going back to the OS, up to `limit` bytes kept.
// Fresh memory costs a page fault per 4 KiB page on first touch (UCX writes into it
// while receiving), which on a virtual machine can cost more than the transfer itself;
// a recycled buffer has its pages already. Thread-safe (the last reference may drop on
// any thread); buffers handed out may outlive the pool.
class BufferPool : public std::enable_shared_from_this<BufferPool> {
 public:
  explicit BufferPool(uint64_t limit) : limit_(limit) {}
  ~BufferPool() {
    for (auto& [size, b] : free_) delete b;
  }

  SharedBuffer Get(uint64_t n) {
    ByteBuffer* b = nullptr;
    {
      MutexLock lock(&mu_);
      auto it = free_.find(n);
      if (it != free_.end()) {
        b = it->second;
        free_bytes_ -= n;
        free_.erase(it);
      }
    }
    if (b == nullptr) b = new ByteBuffer(n);
    std::weak_ptr<BufferPool> pool = weak_from_this();
    return SharedBuffer(b, [pool](ByteBuffer* buf) {
      if (auto p = pool.lock()) return p->Put(buf);
      delete buf;
    });
  }

 private:
  void Put(ByteBuffer* b) {
    {
      MutexLock lock(&mu_);
      if (free_bytes_ + b->size <= limit_) {
        free_bytes_ += b->size;
        free_.emplace(b->size, b);
        return;
      }
    }
    delete b;
  }

  const uint64_t limit_;
  Mutex mu_;
  std::multimap<uint64_t, ByteBuffer*> free_ GUARDED_BY(mu_);
  uint64_t free_bytes_ GUARDED_BY(mu_) = 0;
};

// Finishes received puts (checksum, commit, ack) on a thread of its own, in arrival
// order, so that the worker loop — the thread that drives the transport and, over shared
// memory, copies the next put's bytes — is not held up hashing this one: on a small
// machine the two then overlap instead of adding up. Thread-safe.
class Verifier {
 public:
  explicit Verifier(std::function<void(IncomingPut&)> finish) : finish_(std::move(finish)) {
    thread_ = std::thread([this] { Serve(); });
  }
  // Finishes what was queued, then joins.
  ~Verifier() {
    {
      MutexLock lock(&mu_);
      stop_ = true;
    }
    cv_.Signal();
    thread_.join();
  }
  void Push(IncomingPut p) {
    {
      MutexLock lock(&mu_);
      queue_.push_back(std::move(p));
    }
    cv_.Signal();
  }

 private:
  void Serve() {
    MutexLock lock(&mu_);
    while (true) {
      while (!stop_ && queue_.empty()) cv_.Wait(&mu_);
      if (queue_.empty()) return;  // stopping, nothing left
      IncomingPut p = std::move(queue_.front());
      queue_.pop_front();
      lock.Unlock();
      finish_(p);
      lock.Lock();
    }
  }

  std::function<void(IncomingPut&)> finish_;
  Mutex mu_;
  CondVar cv_;
  std::deque<IncomingPut> queue_ GUARDED_BY(mu_);
  bool stop_ GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace switchyard::kv_store::internal

namespace switchyard::kv_store {

struct KvStoreServer::Impl {
  std::vector<uint8_t> ctrl_buf = std::vector<uint8_t>(kMaxControlBytes);
  transport::TransferHandle ctrl;
  std::list<internal::IncomingPut> puts;
  std::list<internal::PendingProbe> probes;
  Mutex sends_mu;  // the loop and the verifier send
  std::list<internal::PendingSend> sends GUARDED_BY(sends_mu);
  Mutex store_mu;  // the store's calls: the loop and the verifier
  std::shared_ptr<internal::BufferPool> pool;
  mutable Mutex stats_mu;
  KvStoreServerStats stats GUARDED_BY(stats_mu);
  std::unique_ptr<ReceiverCredit> credit;
};

}  // namespace switchyard::kv_store
