// The KV store's worker loop (KvStoreServer::Run): control messages (puts, gets, probes,
// frees), their data receives and replies, and reaping what completed.
#include <chrono>
#include <optional>

#include "base/logging.h"
#include "kv_store/internal/kv_store_server_impl.h"

namespace switchyard::kv_store {
using internal::BufferPool;
using internal::IncomingPut;
using internal::kDiscardBytes;
using internal::PendingProbe;
using internal::PendingSend;
using internal::Verifier;

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

  void Send(transport::EndpointId to, MsgType type, uint64_t xfer, std::vector<uint8_t> payload) {
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

  void SendAck(transport::EndpointId to, uint64_t xfer, RejectReason reason, bool transport_ok,
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

  void OnHello(transport::EndpointId from, uint64_t xfer, std::span<const uint8_t> msg) {
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

  void OnPutHeader(transport::EndpointId from, uint64_t xfer, std::span<const uint8_t> msg) {
    IncomingPut p;
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
  uint64_t ReturnCredit(IncomingPut& p) {
    if (!p.charged) return 0;
    p.charged = false;
    impl->credit->Return(p.sender, p.header.length);
    return p.header.length;
  }

  void FinishPut(IncomingPut& p) {
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

  void OnGet(transport::EndpointId from, uint64_t xfer, std::span<const uint8_t> msg) {
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

  void OnSetEpoch(transport::EndpointId from, uint64_t xfer, std::span<const uint8_t> msg) {
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

  void OnFree(transport::EndpointId from, uint64_t xfer, std::span<const uint8_t> msg) {
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

  void OnProbe(transport::EndpointId from, uint64_t xfer, std::span<const uint8_t> msg) {
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
    transport::EndpointId from = TagSender(tag);
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
    verifier.emplace([&loop](IncomingPut& p) { loop.FinishPut(p); });
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

}  // namespace switchyard::kv_store
