#include "kv_store/kv_store_client.h"

#include "base/logging.h"

namespace switchyard::kv_store {
namespace {

constexpr Duration kSlice = std::chrono::milliseconds(20);
constexpr uint64_t kAckBytes = 4096;

using Clock = std::chrono::steady_clock;

}  // namespace

PendingPut::PendingPut(PendingPut&& o) noexcept
    : client_(std::exchange(o.client_, nullptr)),
      events_(std::move(o.events_)),
      lease_(std::move(o.lease_)),
      grant_(std::move(o.grant_)),
      deadline_(o.deadline_),
      header_(std::move(o.header_)),
      ack_buf_(std::move(o.ack_buf_)),
      ack_(std::move(o.ack_)),
      header_send_(std::move(o.header_send_)),
      data_send_(std::move(o.data_send_)),
      waited_(o.waited_) {}

PendingPut::~PendingPut() {
  if (client_ != nullptr && !waited_) (void)Wait();
}

Result<TransferEvents> PendingPut::Wait() {
  if (client_ == nullptr) return Status::FailedPrecondition("Wait() on an empty PendingPut");
  if (waited_) return Status::FailedPrecondition("PendingPut already waited");
  waited_ = true;
  KvStoreClient* c = client_;
  Status s = c->WaitAlive(header_send_, deadline_);
  if (s.ok()) s = c->WaitAlive(data_send_, deadline_);
  if (s.ok()) {
    events_.transport_complete = true;
    events_.transport_complete_at = Clock::now();
    s = c->WaitAlive(ack_, deadline_);
  }
  // From here the handles are complete or cancelled: the transport no longer reads the
  // caller's buffers, whatever happened.
  data_send_.cancel();
  header_send_.cancel();
  (void)data_send_.wait();
  (void)header_send_.wait();
  grant_.Release();  // the data has left (or never will): the links are free of it
  if (!s.ok()) {
    lease_.Release();  // the worker's ledger for this epoch is gone with it
    return s.Annotate("put " + std::to_string(events_.transfer_id) + " to " + c->address_ +
                      " (sender still owns its blocks)");
  }
  auto ack = DecodeAck(std::span<const uint8_t>(ack_buf_->data(), ack_.bytes()));
  if (!ack.ok()) return ack.status();
  lease_.Release();  // the receiver returned the credit with its ack (invariant 7)
  events_.acked_at = Clock::now();
  events_.receiver_transport_complete = ack->transport_complete;
  events_.validated = ack->validated;
  events_.committed = ack->committed;
  events_.rejected = !ack->committed;
  events_.reason = ack->reason;
  events_.message = ack->message;
  events_.credit_bytes_returned = ack->credit_bytes_returned;
  LogKeys keys;
  keys.transfer_id = std::to_string(events_.transfer_id);
  keys.communicator_epoch = c->communicator_epoch();
  Log(LogLevel::kDebug, ack->committed ? "put committed" : "put rejected",
      keys.With("reason", std::string(RejectReasonName(ack->reason))));
  return events_;
}

KvStoreClient::~KvStoreClient() {
  if (transport_ && peer_ != 0) (void)transport_->Disconnect(peer_);
}

Result<std::unique_ptr<KvStoreClient>> KvStoreClient::Connect(const std::string& address,
                                                              const KvStoreClientOptions& options) {
  std::unique_ptr<KvStoreClient> c(new KvStoreClient());
  c->options_ = options;
  c->address_ = address;
  if (options.credits != nullptr) {
    c->credits_ = options.credits;
  } else {
    c->own_loop_ = std::make_unique<VirtualEventLoop>();
    c->own_credits_ = std::make_unique<net_budget::CreditManager>(c->own_loop_.get());
    c->credits_ = c->own_credits_.get();
  }
  SY_ASSIGN_OR_RETURN(c->transport_, transport::TransportRegistry::Global().Create(
                                         options.transport, options.transport_config));
  SY_RETURN_IF_ERROR(c->Handshake());
  return c;
}

Status KvStoreClient::Handshake() {
  SY_ASSIGN_OR_RETURN(peer_, transport_->Connect(address_));
  SY_ASSIGN_OR_RETURN(id_at_peer_, transport_->IdAtPeer(peer_));
  uint64_t xfer = NextTransferId();
  std::vector<uint8_t> buf(kAckBytes);
  transport::TransferOptions o;
  o.traffic_class = v1::CONTROL;
  SY_ASSIGN_OR_RETURN(transport::TransferHandle reply,
                      transport_->PostRecv({{buf.data(), buf.size()}},
                                           MakeTag(MsgType::kHelloAck, 0, xfer), kFullMask, o));
  std::vector<uint8_t> hello = Encode(Hello{options_.protocol_version, xfer});
  SY_ASSIGN_OR_RETURN(transport::TransferHandle sent,
                      SendControl(MsgType::kHello, xfer, &hello, o));
  auto deadline = Clock::now() + options_.ack_timeout;
  SY_RETURN_IF_ERROR(WaitAlive(sent, deadline).Annotate("hello to " + address_));
  SY_RETURN_IF_ERROR(WaitAlive(reply, deadline).Annotate("hello from " + address_));
  auto ack = DecodeHelloAck(std::span<const uint8_t>(buf.data(), reply.bytes()));
  if (!ack.ok()) return ack.status().Annotate("hello from " + address_);
  if (!ack->refused.empty()) {
    return Status::FailedPrecondition("worker at " + address_ +
                                      " refused the session: " + ack->refused);
  }
  if (ack->max_inflight_bytes == 0 || ack->max_inflight_transfers == 0) {
    return Status::FailedPrecondition("worker at " + address_ + " granted no credit");
  }
  hello_ = std::move(*ack);
  // The credit the worker grants this sender is the ledger's limit (invariant 7).
  net_budget::CreditLimits limits;
  limits.max_inflight_bytes = hello_.max_inflight_bytes;
  limits.max_inflight_transfers = hello_.max_inflight_transfers;
  SY_RETURN_IF_ERROR(credits_->SetLimits(address_, limits));
  LogKeys keys;
  keys.communicator_epoch = hello_.communicator_epoch;
  keys.model_epoch = hello_.model_epoch;
  Log(LogLevel::kInfo, "KV store handshake",
      keys.With("peer", address_)
          .With("credit_per_sender", std::to_string(hello_.max_inflight_bytes))
          .With("credit_total", std::to_string(hello_.total_inflight_bytes)));
  return Status::OK();
}

Status KvStoreClient::Reconnect() {
  if (peer_ != 0) (void)transport_->Disconnect(peer_);
  peer_ = 0;
  return Handshake();
}

Clock::time_point KvStoreClient::DeadlineOf(const transport::TransferOptions& o) const {
  return o.deadline ? *o.deadline : Clock::now() + options_.ack_timeout;
}

Status KvStoreClient::WaitAlive(transport::TransferHandle& h, Clock::time_point deadline) {
  while (true) {
    Status s = h.wait_for(kSlice);
    if (s.code() != StatusCode::kDeadlineExceeded) return s;
    // The slice ran out; the op may have completed just after: then its status counts,
    // not the slice's DeadlineExceeded ("transfer still running").
    if (h.poll()) return h.wait();
    Status peer = transport_->PeerStatus(peer_);
    if (!peer.ok()) {
      h.cancel();
      (void)h.wait();
      return peer;
    }
    if (Clock::now() > deadline) {
      h.cancel();
      (void)h.wait();
      return Status::DeadlineExceeded("no answer from " + address_ + " before the deadline")
          .WithScope(ErrorScope::kTransfer);
    }
  }
}

Result<transport::TransferHandle> KvStoreClient::SendControl(
    MsgType type, uint64_t xfer, std::vector<uint8_t>* payload,
    const transport::TransferOptions& options) {
  return transport_->PostSend(peer_, {{payload->data(), payload->size()}},
                              MakeTag(type, id_at_peer_, xfer), options);
}

Status KvStoreClient::SetModelEpoch(uint64_t epoch,
                                    const transport::TransferOptions& caller_options) {
  transport::TransferOptions options = caller_options;
  options.grant = nullptr;  // a control message
  uint64_t xfer = NextTransferId();
  std::vector<uint8_t> buf(kAckBytes);
  SY_ASSIGN_OR_RETURN(transport::TransferHandle ack,
                      transport_->PostRecv({{buf.data(), buf.size()}},
                                           MakeTag(MsgType::kAck, 0, xfer), kFullMask, options));
  std::vector<uint8_t> msg = Encode(SetEpoch{xfer, epoch});
  SY_ASSIGN_OR_RETURN(transport::TransferHandle sent,
                      SendControl(MsgType::kSetEpoch, xfer, &msg, options));
  auto deadline = DeadlineOf(options);
  SY_RETURN_IF_ERROR(WaitAlive(sent, deadline));
  SY_RETURN_IF_ERROR(WaitAlive(ack, deadline));
  SY_ASSIGN_OR_RETURN(Ack a, DecodeAck(std::span<const uint8_t>(buf.data(), ack.bytes())));
  if (!a.committed) return Status::FailedPrecondition("worker refused the model epoch change");
  hello_.model_epoch = epoch;
  return Status::OK();
}

Status KvStoreClient::Free(const std::string& workflow_id, const std::string& context_id,
                           const std::vector<uint64_t>& block_ids,
                           const transport::TransferOptions& options) {
  GetRequest g;
  g.transfer_id = NextTransferId();
  g.communicator_epoch = hello_.communicator_epoch;
  g.model_epoch = hello_.model_epoch;
  g.workflow_id = workflow_id;
  g.context_id = context_id;
  g.block_ids = block_ids;
  transport::TransferOptions control = options;
  control.traffic_class = v1::CONTROL;
  control.grant = nullptr;
  std::vector<uint8_t> buf(kAckBytes);
  SY_ASSIGN_OR_RETURN(
      transport::TransferHandle ack,
      transport_->PostRecv({{buf.data(), buf.size()}}, MakeTag(MsgType::kAck, 0, g.transfer_id),
                           kFullMask, control));
  std::vector<uint8_t> msg = Encode(g);
  SY_ASSIGN_OR_RETURN(transport::TransferHandle sent,
                      SendControl(MsgType::kFree, g.transfer_id, &msg, control));
  auto deadline = DeadlineOf(options);
  SY_RETURN_IF_ERROR(WaitAlive(sent, deadline));
  SY_RETURN_IF_ERROR(WaitAlive(ack, deadline));
  SY_ASSIGN_OR_RETURN(Ack a, DecodeAck(std::span<const uint8_t>(buf.data(), ack.bytes())));
  if (!a.committed) {
    return Status::FailedPrecondition("worker " + address_ + " refused to free blocks: " +
                                      std::string(RejectReasonName(a.reason)));
  }
  return Status::OK();
}

Result<PendingPut> KvStoreClient::PostPut(const PutRequest& request,
                                          const transport::TransferOptions& options) {
  if (request.blocks.empty()) return Status::InvalidArgument("put: no blocks");
  if (request.blocks.size() > kMaxBlocksPerTransfer) {
    return Status::InvalidArgument("put: more than " + std::to_string(kMaxBlocksPerTransfer) +
                                   " blocks");
  }
  BlockHeader h;
  h.type = MsgType::kPutHeader;
  h.traffic_class = static_cast<uint8_t>(options.traffic_class);
  h.flow_key = options.flow_key;
  h.communicator_epoch = hello_.communicator_epoch;
  h.model_epoch = request.model_epoch;
  h.generation = request.generation;
  h.workflow_id = request.workflow_id;
  h.context_id = request.context_id;
  transport::DescriptorList src;
  for (const auto& b : request.blocks) {
    if (b.data == nullptr || b.bytes == 0) {
      return Status::InvalidArgument("put: block " + std::to_string(b.block_id) + " is empty");
    }
    h.blocks.push_back({b.block_id, b.bytes, 0});
    h.length += b.bytes;
    src.push_back({const_cast<void*>(b.data), b.bytes});
  }
  // A grant on every link of the path in one class (invariant 6), then credit (invariant
  // 7): nothing is posted without both.
  net_budget::Grant grant;
  SY_ASSIGN_OR_RETURN(transport::TransferOptions data_options, GrantFor(options, h.length, &grant));
  SY_ASSIGN_OR_RETURN(net_budget::CreditLease lease,
                      credits_->AcquireCredit(address_, h.length, options_.sender_name));
  for (size_t i = 0; i < h.blocks.size(); ++i) {  // after credit: a refused put hashes nothing
    const BlockSource& b = request.blocks[i];
    h.blocks[i].checksum = b.checksum ? *b.checksum : ChecksumOf(b.data, b.bytes);
  }
  PendingPut p;
  p.client_ = this;
  p.lease_ = std::move(lease);
  p.grant_ = std::move(grant);
  if (data_options.grant == &grant) data_options.grant = &p.grant_;
  p.deadline_ = DeadlineOf(options);
  h.transfer_id = p.events_.transfer_id = NextTransferId();
  p.header_ = Encode(h);
  p.ack_buf_ = std::make_unique<std::vector<uint8_t>>(kAckBytes);
  transport::TransferOptions control = options;
  control.traffic_class = v1::CONTROL;
  control.grant = nullptr;  // control messages use the control reserve, not the data grant
  SY_ASSIGN_OR_RETURN(
      p.ack_, transport_->PostRecv({{p.ack_buf_->data(), kAckBytes}},
                                   MakeTag(MsgType::kAck, 0, h.transfer_id), kFullMask, control));
  SY_ASSIGN_OR_RETURN(p.header_send_,
                      SendControl(MsgType::kPutHeader, h.transfer_id, &p.header_, control));
  SY_ASSIGN_OR_RETURN(
      p.data_send_,
      transport_->PostSend(peer_, src, MakeTag(MsgType::kPutData, id_at_peer_, h.transfer_id),
                           data_options));
  p.events_.posted = true;
  p.events_.posted_at = Clock::now();
  return p;
}

Result<transport::TransferOptions> KvStoreClient::GrantFor(
    const transport::TransferOptions& options, uint64_t bytes, net_budget::Grant* own) {
  if (options.grant != nullptr) {
    SY_RETURN_IF_ERROR(transport::CheckGrant(options, bytes));
    return options;
  }
  if (options_.budgets == nullptr) return options;
  SY_ASSIGN_OR_RETURN(net_budget::TrafficClass cls, net_budget::FromProto(options.traffic_class));
  auto grant = options_.budgets->TryAcquire(options_.budget_path, cls, bytes);
  if (!grant.ok()) {
    return grant.status().Annotate("net_budget grant of " + std::to_string(bytes) + " B in class " +
                                   std::string(net_budget::ClassName(cls)) + " for " + address_ +
                                   " (nothing posted)");
  }
  *own = std::move(grant).value();
  transport::TransferOptions out = options;
  out.grant = own;
  return out;
}

Result<TransferEvents> KvStoreClient::Put(const PutRequest& request,
                                          const transport::TransferOptions& options) {
  SY_ASSIGN_OR_RETURN(PendingPut p, PostPut(request, options));
  return p.Wait();
}

Result<TransferEvents> KvStoreClient::Get(const GetSpec& spec,
                                          const transport::TransferOptions& options) {
  GetRequest g;
  g.transfer_id = NextTransferId();
  g.communicator_epoch = hello_.communicator_epoch;
  g.model_epoch = spec.model_epoch;
  g.generation = spec.generation;
  g.traffic_class = static_cast<uint8_t>(options.traffic_class);
  g.flow_key = options.flow_key;
  g.workflow_id = spec.workflow_id;
  g.context_id = spec.context_id;
  g.block_ids = spec.block_ids;
  if (g.block_ids.empty() || spec.dst.empty()) return Status::InvalidArgument("get: no blocks");
  net_budget::Grant grant;  // released when this function returns: the data has arrived
  SY_ASSIGN_OR_RETURN(transport::TransferOptions data_options,
                      GrantFor(options, transport::TotalLength(spec.dst), &grant));
  TransferEvents ev;
  ev.transfer_id = g.transfer_id;
  std::vector<uint8_t> hdr(kMaxControlBytes);
  transport::TransferOptions control = options;
  control.traffic_class = v1::CONTROL;
  control.grant = nullptr;  // control messages use the control reserve, not the data grant
  SY_ASSIGN_OR_RETURN(
      transport::TransferHandle reply,
      transport_->PostRecv({{hdr.data(), hdr.size()}},
                           MakeTag(MsgType::kGetReply, 0, g.transfer_id), kFullMask, control));
  SY_ASSIGN_OR_RETURN(transport::TransferHandle data,
                      transport_->PostRecv(spec.dst, MakeTag(MsgType::kGetData, 0, g.transfer_id),
                                           kFullMask, data_options));
  std::vector<uint8_t> msg = Encode(g);
  SY_ASSIGN_OR_RETURN(transport::TransferHandle sent,
                      SendControl(MsgType::kGetRequest, g.transfer_id, &msg, control));
  ev.posted = true;
  ev.posted_at = Clock::now();
  auto deadline = DeadlineOf(options);
  SY_RETURN_IF_ERROR(WaitAlive(sent, deadline));
  SY_RETURN_IF_ERROR(WaitAlive(reply, deadline));
  SY_ASSIGN_OR_RETURN(BlockHeader h,
                      DecodeBlockHeader(std::span<const uint8_t>(hdr.data(), reply.bytes())));
  if (h.status != RejectReason::kNone) {
    ev.rejected = true;
    ev.reason = h.status;
    return ev;  // `data` is cancelled by its destructor: nothing follows a rejection
  }
  Status s = WaitAlive(data, deadline);
  if (!s.ok() && !s.IsInvalidArgument()) return s;  // InvalidArgument: truncated, below
  ev.transport_complete = true;
  ev.transport_complete_at = Clock::now();
  // Requester-side validation: ids, epochs, generation, length, checksum.
  RejectReason r = RejectReason::kNone;
  uint64_t sum = 0;
  for (const auto& b : h.blocks) sum += b.bytes;
  if (!s.ok() || data.bytes() != h.length || sum != h.length ||
      transport::TotalLength(spec.dst) < h.length) {
    r = RejectReason::kShortLength;
  } else if (h.workflow_id != spec.workflow_id || h.context_id != spec.context_id) {
    r = RejectReason::kWrongOwner;
  } else if (h.model_epoch != spec.model_epoch) {
    r = RejectReason::kStaleModelEpoch;
  } else if (h.generation != spec.generation) {
    r = RejectReason::kStaleGeneration;
  } else {
    r = CheckBlockChecksums(h.blocks, spec.dst);
  }
  ev.acked_at = Clock::now();
  ev.validated = r == RejectReason::kNone;
  ev.rejected = !ev.validated;
  ev.reason = r;
  return ev;
}

Result<Duration> KvStoreClient::Probe(const void* data, uint64_t bytes,
                                      const transport::TransferOptions& options) {
  uint64_t xfer = NextTransferId();
  std::vector<uint8_t> buf(kAckBytes);
  auto start = Clock::now();
  transport::TransferOptions control = options;
  control.traffic_class = v1::CONTROL;
  control.grant = nullptr;  // control messages use the control reserve, not the data grant
  SY_ASSIGN_OR_RETURN(transport::TransferHandle ack,
                      transport_->PostRecv({{buf.data(), buf.size()}},
                                           MakeTag(MsgType::kAck, 0, xfer), kFullMask, control));
  std::vector<uint8_t> msg = Encode(ProbeHeader{xfer, bytes});
  SY_ASSIGN_OR_RETURN(transport::TransferHandle sent,
                      SendControl(MsgType::kProbeHeader, xfer, &msg, control));
  SY_ASSIGN_OR_RETURN(
      transport::TransferHandle payload,
      transport_->PostSend(peer_, {{const_cast<void*>(data), bytes}},
                           MakeTag(MsgType::kProbeData, id_at_peer_, xfer), options));
  auto deadline = DeadlineOf(options);
  SY_RETURN_IF_ERROR(WaitAlive(sent, deadline));
  SY_RETURN_IF_ERROR(WaitAlive(payload, deadline));
  SY_RETURN_IF_ERROR(WaitAlive(ack, deadline));
  Duration took = Clock::now() - start;
  SY_ASSIGN_OR_RETURN(Ack a, DecodeAck(std::span<const uint8_t>(buf.data(), ack.bytes())));
  if (!a.committed) return Status::DataLoss("probe of " + std::to_string(bytes) + " bytes failed");
  return took;
}

}  // namespace switchyard::kv_store
