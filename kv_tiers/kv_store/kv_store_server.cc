#include "kv_tiers/kv_store/kv_store_server.h"
#include "base/mutex.h"

#include <algorithm>
#include <deque>
#include <functional>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <thread>

#include "base/logging.h"
#include "kv_tiers/kv_store/kv_store_protocol.h"

namespace switchyard::kv_tiers::kv_store {
namespace {

constexpr uint64_t kDiscardBytes = 64;

struct PendingPut {
  BlockHeader header;
  transport::PeerId sender = 0;
  SharedBuffer buffer;                       // declared before `recv`: outlives the receive
  RejectReason early = RejectReason::kNone;  // rejected at header time: data discarded
  std::string early_message;                 // why (a credit refusal names the limit)
  bool reserved = false;
  bool charged = false;  // header.length charged to the sender's receiver credit
  transport::TransferHandle recv;
};

struct PendingProbe {
  transport::PeerId sender = 0;
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
  explicit Verifier(std::function<void(PendingPut&)> finish) : finish_(std::move(finish)) {
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
  void Push(PendingPut p) {
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
      while (!(stop_ || !queue_.empty())) cv_.Wait(&mu_);
      if (queue_.empty()) return;  // stopping, nothing left
      PendingPut p = std::move(queue_.front());
      queue_.pop_front();
      lock.Unlock();
      finish_(p);
      lock.Lock();
    }
  }

  std::function<void(PendingPut&)> finish_;
  Mutex mu_;
  CondVar cv_;
  std::deque<PendingPut> queue_ GUARDED_BY(mu_);
  bool stop_ GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace

uint64_t RandomEpoch() {
  std::random_device rd;
  uint64_t v = 0;
  while (v == 0) v = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  return v;
}

struct KvStoreServer::Impl {
  std::vector<uint8_t> ctrl_buf = std::vector<uint8_t>(kMaxControlBytes);
  transport::TransferHandle ctrl;
  std::list<PendingPut> puts;
  std::list<PendingProbe> probes;
  Mutex sends_mu;  // the loop and the verifier send
  std::list<PendingSend> sends GUARDED_BY(sends_mu);
  Mutex store_mu;  // the store's calls: the loop and the verifier
  std::shared_ptr<BufferPool> pool;
  mutable Mutex stats_mu;
  KvStoreServerStats stats GUARDED_BY(stats_mu);
  std::unique_ptr<ReceiverCredit> credit;
};

namespace {

ReceiverCreditLimits CreditLimitsOf(const KvStoreServerOptions& o) {
  return {std::min(o.max_inflight_bytes, o.total_inflight_bytes), o.total_inflight_bytes,
          o.max_inflight_transfers};
}

}  // namespace

KvStoreServer::KvStoreServer(const KvStoreServerOptions& options, uint64_t epoch)
    : options_(options), store_(options.capacity_bytes, epoch), impl_(std::make_unique<Impl>()) {
  impl_->credit = std::make_unique<ReceiverCredit>(CreditLimitsOf(options));
  // Keep up to the credit granted to one sender: what may be in flight at once.
  impl_->pool = std::make_shared<BufferPool>(options.max_inflight_bytes);
}

KvStoreServer::~KvStoreServer() {
  // Handles first (they cancel and wait), then the transport.
  impl_.reset();
  transport_.reset();
}

Result<std::unique_ptr<KvStoreServer>> KvStoreServer::Start(const KvStoreServerOptions& options) {
  if (options.capacity_bytes == 0) return Status::InvalidArgument("worker: capacity must be > 0");
  if (options.max_inflight_bytes == 0 || options.total_inflight_bytes == 0 ||
      options.max_inflight_transfers == 0) {
    return Status::InvalidArgument(
        "worker: credit per sender, credit total and transfers per sender must be > 0");
  }
  std::unique_ptr<KvStoreServer> w(new KvStoreServer(options, RandomEpoch()));
  SY_ASSIGN_OR_RETURN(w->transport_, transport::TransportRegistry::Global().Create(
                                         options.transport, options.transport_config));
  SY_ASSIGN_OR_RETURN(w->address_, w->transport_->Listen(options.listen));
  if (!w->options_.verify_offload_bytes) {
    w->options_.verify_offload_bytes =
        w->transport_->usesSocketStreams() ? kVerifyOffloadSockets : kVerifyOffloadNoSockets;
  }
  return w;
}

KvStoreServerStats KvStoreServer::stats() const {
  ReceiverCreditState c = impl_->credit->State();
  MutexLock lock(&impl_->stats_mu);
  KvStoreServerStats s = impl_->stats;
  s.puts_refused_credit = c.refused;
  s.credit_in_use_bytes = c.in_use_bytes;
  s.max_credit_in_use_bytes = c.max_in_use_bytes;
  s.max_sender_credit_in_use_bytes = c.max_sender_in_use_bytes;
  s.max_sender_credit_in_use_transfers = c.max_sender_in_use_transfers;
  return s;
}

const ReceiverCreditLimits& KvStoreServer::credit_limits() const { return impl_->credit->limits(); }

RejectReason KvStoreServer::ReadCommitted(const GetRequest& g,
                                          std::vector<StoredBlock>* out) const {
  MutexLock lock(&impl_->store_mu);
  return store_.Lookup(g, out);
}

RejectReason KvStoreServer::CommitLocal(const BlockHeader& h, SharedBuffer data) {
  const uint64_t received = data ? data->size : 0;
  const RejectReason r = CheckLengthAndChecksum(h, received, data ? data->data.get() : nullptr);
  return CommitLocalChecked(h, std::move(data), r);
}

RejectReason KvStoreServer::CommitLocalHashing(BlockHeader* h, SharedBuffer data) {
  const RejectReason r = data ? CheckLength(*h, data->size) : RejectReason::kShortLength;
  if (r != RejectReason::kNone) return CommitLocalChecked(*h, std::move(data), r);
  const auto* p = static_cast<const uint8_t*>(data->data.get());
  for (BlockRef& b : h->blocks) {
    b.checksum = ChecksumOf(p, b.bytes);
    p += b.bytes;
  }
  return CommitLocalChecked(*h, std::move(data), RejectReason::kNone);
}

RejectReason KvStoreServer::CommitLocalChecked(const BlockHeader& h, SharedBuffer data,
                                               RejectReason r) {
  {
    MutexLock lock(&impl_->store_mu);
    if (r == RejectReason::kNone) r = store_.CheckIdentity(h);
    if (r == RejectReason::kNone && !store_.Reserve(h.length)) r = RejectReason::kCapacity;
    bool validated = false;
    if (r == RejectReason::kNone) r = store_.CommitChecked(h, std::move(data), r, &validated);
  }
  MutexLock stats(&impl_->stats_mu);
  ++(r == RejectReason::kNone ? impl_->stats.puts_committed : impl_->stats.puts_rejected);
  return r;
}

namespace {

// The worker loop's steps, as free functions over the worker's parts.
struct Loop {
  transport::Transport* t;
  KvStoreBlocks* store;
  KvStoreServer::Impl* impl;
  const KvStoreServerOptions* options;
  Verifier* verifier = nullptr;

  void Count(uint64_t KvStoreServerStats::*field) {
    MutexLock lock(&impl->stats_mu);
    ++(impl->stats.*field);
  }

  void Send(transport::PeerId to, MsgType type, uint64_t xfer, std::vector<uint8_t> payload) {
    auto keep = std::make_shared<std::vector<uint8_t>>(std::move(payload));
    transport::TransferOptions o;
    o.traffic_class = v1::CONTROL;
    o.silent_completion = true;  // reaped on the next wake-up; nothing to react to
    auto h = t->PostSend(to, {{keep->data(), keep->size()}}, MakeTag(type, 0, xfer), o);
    if (!h.ok()) {
      Log(LogLevel::kWarn, "worker: reply not sent",
          LogKeys{}.With("error", h.status().ToString()));
      return;
    }
    MutexLock lock(&impl->sends_mu);
    impl->sends.push_back({keep, std::move(*h)});
  }

  void SendAck(transport::PeerId to, uint64_t xfer, RejectReason reason, bool transport_ok,
               bool validated, const std::string& message = "", uint64_t credit_bytes = 0) {
    Ack a;
    a.transfer_id = xfer;
    a.committed = reason == RejectReason::kNone && validated;
    a.reason = reason;
    a.credits_returned = 1;
    a.credit_bytes_returned = credit_bytes;
    a.transport_complete = transport_ok;
    a.validated = validated;
    a.message = message;
    Send(to, MsgType::kAck, xfer, Encode(a));
  }

  void PostCtrl() {
    transport::TransferOptions o;
    o.long_wait = true;  // the standing control receive: sleep while only it is pending
    auto h =
        t->PostRecv({{impl->ctrl_buf.data(), impl->ctrl_buf.size()}}, kWorkerBit, kWorkerBit, o);
    impl->ctrl = h.ok() ? std::move(*h) : transport::TransferHandle::Done(h.status());
  }

  void OnHello(transport::PeerId from, uint64_t xfer, std::span<const uint8_t> msg) {
    auto version = HelloVersion(msg);
    HelloAck a;
    if (version.ok() && *version != kProtocolVersion) {  // say so, naming both versions
      a.refused = "peer protocol version mismatch: the sender speaks v" + std::to_string(*version) +
                  ", the worker speaks v" + std::to_string(kProtocolVersion);
      Log(LogLevel::kWarn, "worker: hello refused",
          LogKeys{}.With("peer", std::to_string(from)).With("error", a.refused));
      Send(from, MsgType::kHelloAck, xfer, Encode(a));
      return;
    }
    if (!DecodeHello(msg).ok()) return;  // malformed: nobody to answer
    const ReceiverCreditLimits& credit = impl->credit->limits();
    a.max_inflight_bytes = credit.per_sender_bytes;
    a.total_inflight_bytes = credit.total_bytes;
    a.max_inflight_transfers = credit.per_sender_transfers;
    MutexLock lock(&impl->store_mu);
    a.communicator_epoch = store->communicator_epoch();
    a.model_epoch = store->model_epoch();
    a.capacity_bytes = store->capacity_bytes();
    Send(from, MsgType::kHelloAck, xfer, Encode(a));
  }

  void OnPutHeader(transport::PeerId from, uint64_t xfer, std::span<const uint8_t> msg) {
    PendingPut p;
    p.sender = from;
    auto h = DecodeBlockHeader(msg);
    if (h.ok()) {
      p.header = std::move(*h);
      // Receiver credit first (invariant 7): a put over a limit is refused before anything
      // of it is staged.
      p.early = impl->credit->Charge(from, p.header.length, &p.early_message);
      p.charged = p.early == RejectReason::kNone;
      MutexLock lock(&impl->store_mu);
      if (p.early == RejectReason::kNone) p.early = store->CheckIdentity(p.header);
      if (p.early == RejectReason::kNone) {
        p.reserved = store->Reserve(p.header.length);
        if (!p.reserved) p.early = RejectReason::kCapacity;
      }
    } else {
      p.header.transfer_id = xfer;
      p.early = RejectReason::kMalformed;
    }
    uint64_t n = p.early == RejectReason::kNone ? p.header.length : kDiscardBytes;
    p.buffer = impl->pool->Get(std::max<uint64_t>(n, 1));
    auto r = t->PostRecv({{p.buffer->data.get(), n}}, MakeTag(MsgType::kPutData, from, xfer),
                         kFullMask, transport::TransferOptions{});
    p.recv = r.ok() ? std::move(*r) : transport::TransferHandle::Done(r.status());
    impl->puts.push_back(std::move(p));
  }

  // Returns the put's receiver credit (committed, rejected or cancelled): the bytes
  // returned, for the ack.
  uint64_t ReturnCredit(PendingPut& p) {
    if (!p.charged) return 0;
    p.charged = false;
    impl->credit->Return(p.sender, p.header.length);
    return p.header.length;
  }

  void FinishPut(PendingPut& p) {
    Status s = p.recv.wait();
    if (options->finish_delay.count() > 0) std::this_thread::sleep_for(options->finish_delay);
    uint64_t xfer = p.header.transfer_id;
    // A sender that failed before the commit can never learn the outcome, so nothing may
    // use the blocks: they are dropped, not committed (a put whose data arrived whole just
    // before its sender died, e.g. a direct put whose worker was killed, commits nothing).
    if (s.ok() && !t->PeerStatus(p.sender).ok()) s = Status::Cancelled("sender failed");
    if (s.IsCancelled()) {  // the sender failed: nobody to ack
      MutexLock lock(&impl->store_mu);
      if (p.reserved) store->Unreserve(p.header.length);
      ReturnCredit(p);
      Count(&KvStoreServerStats::cancelled);
      return;
    }
    RejectReason reason = p.early;
    bool validated = false;
    if (reason != RejectReason::kNone) {
      MutexLock lock(&impl->store_mu);
      if (p.reserved) store->Unreserve(p.header.length);
    } else if (!s.ok()) {
      MutexLock lock(&impl->store_mu);
      store->Unreserve(p.header.length);
      reason = RejectReason::kShortLength;  // more bytes than the header announced
    } else {
      // Hash outside the lock: the loop keeps serving headers and gets meanwhile. The
      // staging buffer holds at least header.length bytes, and the check compares the
      // received count with it before reading any.
      RejectReason checked = CheckLengthAndChecksum(p.header, p.recv.bytes(), p.buffer->data.get());
      MutexLock lock(&impl->store_mu);
      reason = store->CommitChecked(p.header, p.buffer, checked, &validated);
    }
    Count(reason == RejectReason::kNone ? &KvStoreServerStats::puts_committed
                                        : &KvStoreServerStats::puts_rejected);
    LogKeys keys;
    keys.transfer_id = std::to_string(xfer);
    keys.model_epoch = p.header.model_epoch;
    keys.communicator_epoch = store->communicator_epoch();
    keys.workflow_id = p.header.workflow_id;
    keys.With("outcome", reason == RejectReason::kNone ? "committed" : "rejected")
        .With("reason", std::string(RejectReasonName(reason)))
        .With("bytes", std::to_string(p.recv.bytes()));
    Log(LogLevel::kDebug, "worker: put", keys);
    // Credit back before the ack leaves: the sender frees its lease on the ack.
    uint64_t returned = ReturnCredit(p);
    SendAck(p.sender, xfer, reason, s.ok() || p.early != RejectReason::kNone, validated,
            p.early_message, returned);
  }

  void OnGet(transport::PeerId from, uint64_t xfer, std::span<const uint8_t> msg) {
    BlockHeader reply;
    reply.type = MsgType::kGetReply;
    auto g = DecodeGetRequest(msg);
    auto blocks = std::make_shared<std::vector<StoredBlock>>();
    if (!g.ok()) {
      reply.transfer_id = xfer;
      reply.status = RejectReason::kMalformed;
    } else {
      reply.transfer_id = g->transfer_id;
      reply.communicator_epoch = g->communicator_epoch;
      reply.model_epoch = g->model_epoch;
      reply.generation = g->generation;
      reply.traffic_class = g->traffic_class;
      reply.flow_key = g->flow_key;
      reply.workflow_id = g->workflow_id;
      reply.context_id = g->context_id;
      MutexLock lock(&impl->store_mu);
      reply.status = store->Lookup(*g, blocks.get());
    }
    if (reply.status != RejectReason::kNone) {
      Count(&KvStoreServerStats::gets_rejected);
      Send(from, MsgType::kGetReply, xfer, Encode(reply));
      return;
    }
    transport::DescriptorList src;
    for (const auto& b : *blocks) {  // checksums verified at commit: no hashing here
      src.push_back({const_cast<uint8_t*>(b.data()), b.bytes});
      reply.blocks.push_back({b.block_id, b.bytes, b.checksum});
      reply.length += b.bytes;
    }
    Send(from, MsgType::kGetReply, xfer, Encode(reply));
    transport::TransferOptions o;
    o.traffic_class = static_cast<v1::TrafficClass>(reply.traffic_class);
    o.flow_key = reply.flow_key;
    auto h = t->PostSend(from, src, MakeTag(MsgType::kGetData, 0, xfer), o);
    if (h.ok()) {
      MutexLock lock(&impl->sends_mu);
      impl->sends.push_back({blocks, std::move(*h)});
    }
    Count(&KvStoreServerStats::gets_served);
  }

  void OnSetEpoch(transport::PeerId from, uint64_t xfer, std::span<const uint8_t> msg) {
    auto e = DecodeSetEpoch(msg);
    if (!e.ok()) return SendAck(from, xfer, RejectReason::kMalformed, true, false);
    size_t dropped = 0;
    {
      MutexLock lock(&impl->store_mu);
      dropped = store->SetModelEpoch(e->model_epoch);
    }
    LogKeys keys;
    keys.model_epoch = e->model_epoch;
    Log(LogLevel::kInfo, "worker: model epoch changed",
        keys.With("dropped_blocks", std::to_string(dropped)));
    SendAck(from, xfer, RejectReason::kNone, true, true);
  }

  void OnFree(transport::PeerId from, uint64_t xfer, std::span<const uint8_t> msg) {
    auto g = DecodeGetRequest(msg);
    if (!g.ok()) return SendAck(from, xfer, RejectReason::kMalformed, true, false);
    size_t freed = 0;
    RejectReason r = RejectReason::kNone;
    {
      MutexLock lock(&impl->store_mu);
      r = store->Free(*g, &freed);
    }
    LogKeys keys;
    keys.workflow_id = g->workflow_id;
    Log(LogLevel::kDebug, "worker: free",
        keys.With("freed_blocks", std::to_string(freed))
            .With("reason", std::string(RejectReasonName(r))));
    SendAck(from, xfer, r, true, r == RejectReason::kNone);
  }

  void OnProbe(transport::PeerId from, uint64_t xfer, std::span<const uint8_t> msg) {
    auto p = DecodeProbeHeader(msg);
    PendingProbe probe;
    probe.sender = from;
    probe.transfer_id = xfer;
    uint64_t n = p.ok() ? p->length : kDiscardBytes;
    probe.buffer = impl->pool->Get(std::max<uint64_t>(n, 1));
    auto r = t->PostRecv({{probe.buffer->data.get(), n}}, MakeTag(MsgType::kProbeData, from, xfer),
                         kFullMask, transport::TransferOptions{});
    probe.recv = r.ok() ? std::move(*r) : transport::TransferHandle::Done(r.status());
    impl->probes.push_back(std::move(probe));
  }

  void OnControl() {
    Status s = impl->ctrl.wait();
    transport::Tag tag = impl->ctrl.sender_tag();
    uint64_t n = impl->ctrl.bytes();
    if (!s.ok()) {
      if (!s.IsCancelled()) {
        Log(LogLevel::kWarn, "worker: control receive failed",
            LogKeys{}.With("error", s.ToString()));
      }
      return;
    }
    std::vector<uint8_t> copy(impl->ctrl_buf.begin(), impl->ctrl_buf.begin() + n);
    PostCtrl();  // keep a receive posted while this one is handled
    transport::PeerId from = TagSender(tag);
    uint64_t xfer = tag & 0xffffffffull;
    std::span<const uint8_t> msg(copy);
    switch (TagType(tag)) {
      case MsgType::kHello:
        return OnHello(from, xfer, msg);
      case MsgType::kPutHeader:
        return OnPutHeader(from, xfer, msg);
      case MsgType::kGetRequest:
        return OnGet(from, xfer, msg);
      case MsgType::kSetEpoch:
        return OnSetEpoch(from, xfer, msg);
      case MsgType::kProbeHeader:
        return OnProbe(from, xfer, msg);
      case MsgType::kFree:
        return OnFree(from, xfer, msg);
      default:
        Log(LogLevel::kWarn, "worker: unknown control message",
            LogKeys{}.With("type", std::to_string(static_cast<int>(TagType(tag)))));
    }
  }

  // Completed puts, probes and sends; transfers of failed senders are cancelled.
  bool Reap(bool sweep_failed) {
    bool any = false;
    for (auto it = impl->puts.begin(); it != impl->puts.end();) {
      if (sweep_failed && !it->recv.poll() && !t->PeerStatus(it->sender).ok()) it->recv.cancel();
      if (!it->recv.poll()) {
        ++it;
        continue;
      }
      if (it->early == RejectReason::kNone && verifier != nullptr &&
          it->header.length >= *options->verify_offload_bytes) {
        Count(&KvStoreServerStats::puts_offloaded);
        verifier->Push(std::move(*it));
      } else {
        FinishPut(*it);
      }
      it = impl->puts.erase(it);
      any = true;
    }
    for (auto it = impl->probes.begin(); it != impl->probes.end();) {
      if (sweep_failed && !it->recv.poll() && !t->PeerStatus(it->sender).ok()) it->recv.cancel();
      if (!it->recv.poll()) {
        ++it;
        continue;
      }
      Status s = it->recv.wait();
      if (!s.IsCancelled()) {
        Count(&KvStoreServerStats::probes);
        SendAck(it->sender, it->transfer_id,
                s.ok() ? RejectReason::kNone : RejectReason::kShortLength, s.ok(), s.ok());
      }
      it = impl->probes.erase(it);
      any = true;
    }
    MutexLock lock(&impl->sends_mu);
    for (auto it = impl->sends.begin(); it != impl->sends.end();) {
      if (!it->send.poll()) {
        ++it;
        continue;
      }
      it = impl->sends.erase(it);
      any = true;
    }
    return any;
  }
};

}  // namespace

void KvStoreServer::Run() {
  Loop loop{transport_.get(), &store_, impl_.get(), &options_};
  std::optional<Verifier> verifier;
  if (*options_.verify_offload_bytes > 0) {
    verifier.emplace([&loop](PendingPut& p) { loop.FinishPut(p); });
    loop.verifier = &*verifier;
  }
  loop.PostCtrl();
  auto last_sweep = std::chrono::steady_clock::now();
  while (!stop_.load()) {
    uint64_t seen = transport_->CompletionCount();
    bool progressed = false;
    if (impl_->ctrl.poll()) {
      loop.OnControl();
      progressed = true;
    }
    auto now = std::chrono::steady_clock::now();
    bool sweep = now - last_sweep > std::chrono::milliseconds(50);
    if (sweep) last_sweep = now;
    progressed |= loop.Reap(sweep);
    if (!progressed) transport_->WaitForCompletion(seen, std::chrono::milliseconds(20));
  }
}

}  // namespace switchyard::kv_tiers::kv_store
