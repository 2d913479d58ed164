#include "kv_store/kv_store_protocol.h"

#include <xxhash.h>
#if defined(__x86_64__)
#include <xxh_x86dispatch.h>
#endif

#include <algorithm>
#include <cstring>
#include <optional>

#include "kv_tiers/prefix_hash.h"

namespace switchyard::kv_store {
namespace {

class Writer {
 public:
  explicit Writer(MsgType type) { out_.push_back(static_cast<uint8_t>(type)); }
  Writer& U8(uint8_t v) {
    out_.push_back(v);
    return *this;
  }
  Writer& U32(uint32_t v) { return Int(v, 4); }
  Writer& U64(uint64_t v) { return Int(v, 8); }
  Writer& Str(const std::string& s) {
    U32(static_cast<uint32_t>(s.size()));
    out_.insert(out_.end(), s.begin(), s.end());
    return *this;
  }
  std::vector<uint8_t> Take() { return std::move(out_); }

 private:
  Writer& Int(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out_.push_back(static_cast<uint8_t>(v >> (8 * i)));
    return *this;
  }
  std::vector<uint8_t> out_;
};

class Reader {
 public:
  Reader(std::span<const uint8_t> in, MsgType type, const char* what) : in_(in), what_(what) {
    if (in.empty() || in[0] != static_cast<uint8_t>(type)) {
      Fail("message type");
    } else {
      pos_ = 1;
    }
  }
  uint8_t U8(const char* field) { return static_cast<uint8_t>(Int(1, field)); }
  uint32_t U32(const char* field) { return static_cast<uint32_t>(Int(4, field)); }
  uint64_t U64(const char* field) { return Int(8, field); }
  std::string Str(const char* field) {
    uint32_t n = U32(field);
    if (!ok_ || n > kMaxControlBytes || pos_ + n > in_.size()) {
      Fail(field);
      return {};
    }
    std::string s(reinterpret_cast<const char*>(in_.data() + pos_), n);
    pos_ += n;
    return s;
  }
  // Count of a repeated field, bounded.
  uint32_t Count(const char* field, uint32_t max) {
    uint32_t n = U32(field);
    if (n > max) Fail(field);
    return ok_ ? n : 0;
  }
  Status Finish() {
    if (ok_ && pos_ != in_.size()) Fail("trailing bytes");
    if (ok_) return Status::OK();
    return Status::InvalidArgument(std::string("peer protocol: malformed ") + what_ + " (" +
                                   bad_field_ + ")");
  }

 private:
  uint64_t Int(int n, const char* field) {
    if (!ok_ || pos_ + n > in_.size()) {
      Fail(field);
      return 0;
    }
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) v |= static_cast<uint64_t>(in_[pos_ + i]) << (8 * i);
    pos_ += n;
    return v;
  }
  void Fail(const char* field) {
    if (ok_) bad_field_ = field;
    ok_ = false;
  }
  std::span<const uint8_t> in_;
  const char* what_;
  size_t pos_ = 0;
  bool ok_ = true;
  std::string bad_field_;
};

}  // namespace

transport::Tag MakeTag(MsgType type, uint64_t sender_id, uint64_t transfer_id) {
  return (static_cast<uint64_t>(type) << 56) | ((sender_id & 0xffffff) << 32) |
         (transfer_id & 0xffffffffull);
}
MsgType TagType(transport::Tag tag) { return static_cast<MsgType>(tag >> 56); }
uint32_t TagSender(transport::Tag tag) { return static_cast<uint32_t>((tag >> 32) & 0xffffff); }

std::string_view RejectReasonName(RejectReason r) {
  switch (r) {
    case RejectReason::kNone:
      return "none";
    case RejectReason::kShortLength:
      return "short_length";
    case RejectReason::kBadChecksum:
      return "bad_checksum";
    case RejectReason::kStaleCommEpoch:
      return "stale_communicator_epoch";
    case RejectReason::kStaleModelEpoch:
      return "stale_model_epoch";
    case RejectReason::kWrongOwner:
      return "wrong_owner";
    case RejectReason::kStaleGeneration:
      return "stale_generation";
    case RejectReason::kCapacity:
      return "capacity";
    case RejectReason::kNotFound:
      return "not_found";
    case RejectReason::kMalformed:
      return "malformed";
    case RejectReason::kCredit:
      return "credit";
  }
  return "unknown";
}

Status RejectStatus(RejectReason reason, const std::string& what, const std::string& message) {
  std::string msg = what + " rejected by the worker: " + std::string(RejectReasonName(reason));
  if (!message.empty()) msg += " (" + message + ")";
  switch (reason) {
    case RejectReason::kCapacity:
    case RejectReason::kCredit:  // over the worker's credit: retryable once it returns
      return Status::ResourceExhausted(msg);
    case RejectReason::kStaleCommEpoch:
      return Status::Unavailable(msg + "; the worker restarted", ErrorScope::kRemote);
    case RejectReason::kNotFound:
      return Status::DataLoss(msg, ErrorScope::kBlock);
    default:
      return Status::DataLoss(msg, ErrorScope::kTransfer);
  }
}

std::vector<uint8_t> Encode(const BlockHeader& h) {
  Writer w(h.type);
  w.U8(h.traffic_class).U64(h.flow_key).U64(h.transfer_id).U64(h.communicator_epoch);
  w.U64(h.model_epoch).U64(h.generation).U64(h.length);
  w.Str(h.workflow_id).Str(h.context_id).U8(static_cast<uint8_t>(h.status));
  w.U32(static_cast<uint32_t>(h.blocks.size()));
  for (const auto& b : h.blocks) w.U64(b.block_id).U64(b.bytes).U64(b.checksum);
  return w.Take();
}

Result<BlockHeader> DecodeBlockHeader(std::span<const uint8_t> in) {
  BlockHeader h;
  h.type = in.empty() ? MsgType::kPutHeader : static_cast<MsgType>(in[0]);
  if (h.type != MsgType::kGetReply) h.type = MsgType::kPutHeader;
  Reader r(in, h.type, "block header");
  h.traffic_class = r.U8("traffic_class");
  h.flow_key = r.U64("flow_key");
  h.transfer_id = r.U64("transfer_id");
  h.communicator_epoch = r.U64("communicator_epoch");
  h.model_epoch = r.U64("model_epoch");
  h.generation = r.U64("generation");
  h.length = r.U64("length");
  h.workflow_id = r.Str("workflow_id");
  h.context_id = r.Str("context_id");
  uint8_t status = r.U8("status");
  uint32_t n = r.Count("blocks", kMaxBlocksPerTransfer);
  for (uint32_t i = 0; i < n; ++i) {
    BlockRef b;
    b.block_id = r.U64("block_id");
    b.bytes = r.U64("block_bytes");
    b.checksum = r.U64("block_checksum");
    h.blocks.push_back(b);
  }
  SY_RETURN_IF_ERROR(r.Finish());
  if (status > static_cast<uint8_t>(RejectReason::kCredit)) {
    return Status::InvalidArgument("peer protocol: block header has unknown status");
  }
  h.status = static_cast<RejectReason>(status);
  return h;
}

std::vector<uint8_t> Encode(const GetRequest& g) {
  Writer w(MsgType::kGetRequest);
  w.U64(g.transfer_id).U64(g.communicator_epoch).U64(g.model_epoch).U64(g.generation);
  w.U8(g.traffic_class).U64(g.flow_key).Str(g.workflow_id).Str(g.context_id);
  w.U32(static_cast<uint32_t>(g.block_ids.size()));
  for (uint64_t id : g.block_ids) w.U64(id);
  return w.Take();
}

Result<GetRequest> DecodeGetRequest(std::span<const uint8_t> in) {
  Reader r(in, MsgType::kGetRequest, "get request");
  GetRequest g;
  g.transfer_id = r.U64("transfer_id");
  g.communicator_epoch = r.U64("communicator_epoch");
  g.model_epoch = r.U64("model_epoch");
  g.generation = r.U64("generation");
  g.traffic_class = r.U8("traffic_class");
  g.flow_key = r.U64("flow_key");
  g.workflow_id = r.Str("workflow_id");
  g.context_id = r.Str("context_id");
  uint32_t n = r.Count("block_ids", kMaxBlocksPerTransfer);
  for (uint32_t i = 0; i < n; ++i) g.block_ids.push_back(r.U64("block_id"));
  SY_RETURN_IF_ERROR(r.Finish());
  return g;
}

std::vector<uint8_t> Encode(const Ack& a) {
  Writer w(MsgType::kAck);
  w.U64(a.transfer_id).U8(a.committed ? 1 : 0).U8(static_cast<uint8_t>(a.reason));
  w.U32(a.credits_returned).U64(a.credit_bytes_returned);
  w.U8(a.transport_complete ? 1 : 0).U8(a.validated ? 1 : 0);
  w.Str(a.message);
  return w.Take();
}

Result<Ack> DecodeAck(std::span<const uint8_t> in) {
  Reader r(in, MsgType::kAck, "ack");
  Ack a;
  a.transfer_id = r.U64("transfer_id");
  a.committed = r.U8("committed") != 0;
  uint8_t reason = r.U8("reason");
  a.credits_returned = r.U32("credits_returned");
  a.credit_bytes_returned = r.U64("credit_bytes_returned");
  a.transport_complete = r.U8("transport_complete") != 0;
  a.validated = r.U8("validated") != 0;
  a.message = r.Str("message");
  SY_RETURN_IF_ERROR(r.Finish());
  if (reason > static_cast<uint8_t>(RejectReason::kCredit)) {
    return Status::InvalidArgument("peer protocol: ack has unknown reason");
  }
  a.reason = static_cast<RejectReason>(reason);
  return a;
}

namespace {

constexpr size_t kUnversionedHelloBytes = 9;      // type, incarnation
constexpr size_t kUnversionedHelloAckBytes = 37;  // type, 4 x u64, u32

Status VersionMismatch(const char* what, uint32_t theirs) {
  return Status::FailedPrecondition(std::string("peer protocol version mismatch: the ") + what +
                                    " speaks v" + std::to_string(theirs) + ", this side speaks v" +
                                    std::to_string(kProtocolVersion));
}

}  // namespace

Result<uint32_t> HelloVersion(std::span<const uint8_t> in) {
  uint8_t type = PeekType(in);
  if (type == static_cast<uint8_t>(MsgType::kHello) && in.size() == kUnversionedHelloBytes) {
    return 1u;
  }
  if (type == static_cast<uint8_t>(MsgType::kHelloAck) && in.size() == kUnversionedHelloAckBytes) {
    return 1u;
  }
  if (in.size() < 5) return Status::InvalidArgument("peer protocol: hello too short for a version");
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(in[1 + i]) << (8 * i);
  return v;
}

std::vector<uint8_t> Encode(const Hello& h) {
  return Writer(MsgType::kHello).U32(h.protocol_version).U64(h.sender_incarnation).Take();
}
Result<Hello> DecodeHello(std::span<const uint8_t> in) {
  if (PeekType(in) != static_cast<uint8_t>(MsgType::kHello)) {
    return Status::InvalidArgument("peer protocol: malformed hello (message type)");
  }
  SY_ASSIGN_OR_RETURN(uint32_t version, HelloVersion(in));
  if (version != kProtocolVersion) return VersionMismatch("sender", version);
  Reader r(in, MsgType::kHello, "hello");
  Hello h;
  h.protocol_version = r.U32("protocol_version");
  h.sender_incarnation = r.U64("sender_incarnation");
  SY_RETURN_IF_ERROR(r.Finish());
  return h;
}

std::vector<uint8_t> Encode(const HelloAck& h) {
  Writer w(MsgType::kHelloAck);
  w.U32(h.protocol_version).Str(h.refused);
  w.U64(h.communicator_epoch).U64(h.model_epoch).U64(h.capacity_bytes);
  w.U64(h.max_inflight_bytes).U64(h.total_inflight_bytes).U32(h.max_inflight_transfers);
  return w.Take();
}
Result<HelloAck> DecodeHelloAck(std::span<const uint8_t> in) {
  if (PeekType(in) != static_cast<uint8_t>(MsgType::kHelloAck)) {
    return Status::InvalidArgument("peer protocol: malformed hello ack (message type)");
  }
  SY_ASSIGN_OR_RETURN(uint32_t version, HelloVersion(in));
  if (version != kProtocolVersion) return VersionMismatch("worker", version);
  Reader r(in, MsgType::kHelloAck, "hello ack");
  HelloAck h;
  h.protocol_version = r.U32("protocol_version");
  h.refused = r.Str("refused");
  h.communicator_epoch = r.U64("communicator_epoch");
  h.model_epoch = r.U64("model_epoch");
  h.capacity_bytes = r.U64("capacity_bytes");
  h.max_inflight_bytes = r.U64("max_inflight_bytes");
  h.total_inflight_bytes = r.U64("total_inflight_bytes");
  h.max_inflight_transfers = r.U32("max_inflight_transfers");
  SY_RETURN_IF_ERROR(r.Finish());
  return h;
}

std::vector<uint8_t> Encode(const SetEpoch& e) {
  return Writer(MsgType::kSetEpoch).U64(e.transfer_id).U64(e.model_epoch).Take();
}
Result<SetEpoch> DecodeSetEpoch(std::span<const uint8_t> in) {
  Reader r(in, MsgType::kSetEpoch, "set epoch");
  SetEpoch e;
  e.transfer_id = r.U64("transfer_id");
  e.model_epoch = r.U64("model_epoch");
  SY_RETURN_IF_ERROR(r.Finish());
  return e;
}

std::vector<uint8_t> Encode(const ProbeHeader& p) {
  return Writer(MsgType::kProbeHeader).U64(p.transfer_id).U64(p.length).Take();
}
Result<ProbeHeader> DecodeProbeHeader(std::span<const uint8_t> in) {
  Reader r(in, MsgType::kProbeHeader, "probe header");
  ProbeHeader p;
  p.transfer_id = r.U64("transfer_id");
  p.length = r.U64("length");
  SY_RETURN_IF_ERROR(r.Finish());
  return p;
}

uint8_t PeekType(std::span<const uint8_t> in) { return in.empty() ? 0 : in[0]; }

// The block checksum (kv_tiers::BlockChecksum: XXH3-64 with libxxhash's runtime CPU
// dispatch), so that a block's stored checksum is its wire checksum. Streaming over
// several descriptors uses the dispatched update for the same speed and value.
#if defined(__x86_64__)
#define SY_XXH3_UPDATE(state, data, len) XXH3_64bits_update_dispatch(state, data, len)
#else
#define SY_XXH3_UPDATE(state, data, len) XXH3_64bits_update(state, data, len)
#endif

uint64_t ChecksumOf(const void* data, uint64_t bytes) {
  return kv_tiers::BlockChecksum(data, bytes);
}

namespace {

// Reads consecutive byte ranges out of a descriptor list (ranges may span descriptors).
class DescriptorCursor {
 public:
  explicit DescriptorCursor(const transport::DescriptorList& list) : list_(list) {}
  ~DescriptorCursor() {
    if (state_ != nullptr) XXH3_freeState(state_);
  }
  DescriptorCursor(const DescriptorCursor&) = delete;
  DescriptorCursor& operator=(const DescriptorCursor&) = delete;

  // XXH3-64 of the next `n` bytes; nullopt when fewer are left.
  std::optional<uint64_t> HashNext(uint64_t n) {
    while (d_ < list_.size() && off_ == list_[d_].length) Advance();
    if (n == 0) return ChecksumOf(nullptr, 0);
    if (d_ == list_.size()) return std::nullopt;
    if (list_[d_].length - off_ >= n) {  // the usual case: within one descriptor
      off_ += n;
      return ChecksumOf(Here() - n, n);
    }
    if (state_ == nullptr) state_ = XXH3_createState();
    XXH3_64bits_reset(state_);
    while (n > 0 && d_ < list_.size()) {
      uint64_t take = std::min(n, list_[d_].length - off_);
      SY_XXH3_UPDATE(state_, Here(), take);
      n -= take;
      off_ += take;
      if (off_ == list_[d_].length) Advance();
    }
    if (n > 0) return std::nullopt;
    return XXH3_64bits_digest(state_);
  }

 private:
  const uint8_t* Here() const { return static_cast<const uint8_t*>(list_[d_].addr) + off_; }
  void Advance() {
    ++d_;
    off_ = 0;
  }
  const transport::DescriptorList& list_;
  size_t d_ = 0;
  uint64_t off_ = 0;
  XXH3_state_t* state_ = nullptr;
};

}  // namespace

uint64_t ChecksumOf(const transport::DescriptorList& list) {
  uint64_t total = 0;
  for (const auto& d : list) total += d.length;
  return *DescriptorCursor(list).HashNext(total);
}

RejectReason CheckLength(const BlockHeader& h, uint64_t received) {
  uint64_t sum = 0;
  for (const auto& b : h.blocks) sum += b.bytes;
  return received != h.length || sum != h.length ? RejectReason::kShortLength : RejectReason::kNone;
}

RejectReason CheckLengthAndChecksum(const BlockHeader& h, uint64_t received, const void* data) {
  if (RejectReason r = CheckLength(h, received); r != RejectReason::kNone) return r;
  const auto* p = static_cast<const uint8_t*>(data);
  for (const auto& b : h.blocks) {
    if (ChecksumOf(p, b.bytes) != b.checksum) return RejectReason::kBadChecksum;
    p += b.bytes;
  }
  return RejectReason::kNone;
}

RejectReason CheckBlockChecksums(const std::vector<BlockRef>& blocks,
                                 const transport::DescriptorList& data) {
  DescriptorCursor cursor(data);
  for (const auto& b : blocks) {
    std::optional<uint64_t> sum = cursor.HashNext(b.bytes);
    if (!sum) return RejectReason::kShortLength;
    if (*sum != b.checksum) return RejectReason::kBadChecksum;
  }
  return RejectReason::kNone;
}

}  // namespace switchyard::kv_store
