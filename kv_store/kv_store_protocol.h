// The KV-store protocol: the messages that move KV blocks between a process and a KV store
// (the host-memory block store a `switchyard worker` serves, kv_store_server.h) over a
// byte transport (transport/transport.h), and the receiver-side checks of the
// commit rule.
//
// A session opens with a Hello (carrying the protocol version the sender speaks) and the
// worker's HelloAck (its version, epochs, capacity and the credit it grants: bytes per
// sender and in total, transfers per sender); a version mismatch is refused on both sides
// with FailedPrecondition naming both versions.
// A put is: the sender holds per-destination credit (net_budget/credit.h, limits from the
// HelloAck) -> sends a BlockHeader (kPutHeader) and then the block bytes (kPutData, same
// transfer id) -> the receiver charges the header against its own credit ledger
// (receiver_credit.h; refused as kCredit when over a limit) and checks length, each block's
// checksum (XXH3-64), communicator epoch, model epoch, owner and generation -> commits into its
// block table or rejects -> sends an Ack carrying the outcome, a reason and the credit it returns
// -> only then may the sender free its copy (docs/design.md invariants 1, 2, 7). A get is the
// mirror image (kGetRequest, then a kGetReply header and kGetData bytes, validated by the
// requester). Wire headers carry a traffic class and a flow key, never raw user request ids
// (invariant 8); the owner (workflow id, context id) is what the commit rule checks.
//
// Tags (64 bits): [63..56] message type, [55..32] the sender's id at the receiver (from
// the transport handshake), [31..0] the low 32 bits of the transfer id. Message types
// that a worker receives unsolicited have bit 63 set, so one receive with mask
// kWorkerMask catches them all.
// Checksums are per block and are the block's own checksum (kv_tiers::BlockChecksum, the
// same XXH3-64): a sender that stored it when the block was written sends it without
// hashing again, and the worker keeps it with the block to answer gets without hashing.
// Encoding: little-endian, fixed-width integers, u32-length-prefixed strings; decoding
// rejects short, oversized or unknown input with InvalidArgument naming the field.
//
// Thread-safety: pure functions on values.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/result.h"
#include "transport/transport.h"

namespace switchyard::kv_store {

enum class MsgType : uint8_t {
  kHello = 0x81,        // sender -> worker: open a session
  kPutHeader = 0x82,    // sender -> worker: a put follows
  kGetRequest = 0x83,   // requester -> worker
  kProbeHeader = 0x84,  // calibration: a probe payload follows, acked without commit
  kSetEpoch = 0x85,     // sender -> worker: a new model epoch (older blocks invalidated)
  kFree = 0x86,         // owner -> worker: drop committed blocks (a GetRequest body; acked)
  kHelloAck = 0x01,
  kPutData = 0x02,
  kAck = 0x03,
  kGetReply = 0x04,
  kGetData = 0x05,
  kProbeData = 0x06,
};
constexpr transport::Tag kWorkerBit = 1ull << 63;
constexpr transport::Tag kTypeMask = 0xffull << 56;
constexpr transport::Tag kFullMask = ~0ull;
constexpr uint32_t kMaxControlBytes = 64 * 1024;
constexpr uint32_t kMaxBlocksPerTransfer = 4096;
// The KV-store protocol's version, sent in Hello and HelloAck. 1: the unversioned layout
// before receiver-granted credit (no version field; recognised by its length). 2: Hello
// and HelloAck carry the version, HelloAck the per-sender and total credit, Ack the
// credit bytes returned, RejectReason kCredit.
constexpr uint32_t kProtocolVersion = 2;

transport::Tag MakeTag(MsgType type, uint64_t sender_id, uint64_t transfer_id);
MsgType TagType(transport::Tag tag);
uint32_t TagSender(transport::Tag tag);

// Why a receiver refused a transfer.
enum class RejectReason : uint8_t {
  kNone = 0,
  kShortLength,      // bytes received != header length (or != sum of block sizes)
  kBadChecksum,      // a block's checksum (XXH3-64) does not match its bytes
  kStaleCommEpoch,   // header from an older communicator epoch (peer restarted)
  kStaleModelEpoch,  // model_epoch differs from the receiver's
  kWrongOwner,       // a block id already owned by another workflow/context
  kStaleGeneration,  // generation not newer than the committed block's
  kCapacity,         // receiver tier full
  kNotFound,         // get: block not present
  kMalformed,        // header failed to decode or is inconsistent
  kCredit,           // put refused: over the receiver's per-sender or total credit
};
std::string_view RejectReasonName(RejectReason r);
// The status of a transfer (`what`) the receiver refused for `reason` (its `message`):
// ResourceExhausted for capacity and credit (retryable once room or credit returns),
// Unavailable (remote scope) for a stale communicator epoch (the receiver restarted),
// DataLoss (block scope) for a block not found, DataLoss (transfer scope) otherwise.
Status RejectStatus(RejectReason reason, const std::string& what, const std::string& message);

struct BlockRef {
  uint64_t block_id = 0;
  uint64_t bytes = 0;
  uint64_t checksum = 0;  // XXH3-64 (seed 0) of this block's bytes
};

// Put header and get reply header.
struct BlockHeader {
  MsgType type = MsgType::kPutHeader;
  uint8_t traffic_class = 0;  // v1::TrafficClass
  uint64_t flow_key = 0;
  uint64_t transfer_id = 0;
  uint64_t communicator_epoch = 0;
  uint64_t model_epoch = 0;
  uint64_t generation = 0;
  uint64_t length = 0;  // bytes of the data message: the blocks back to back, in order
  std::string workflow_id;
  std::string context_id;
  std::vector<BlockRef> blocks;
  RejectReason status = RejectReason::kNone;  // get reply: why nothing follows
};

struct GetRequest {
  uint64_t transfer_id = 0;
  uint64_t communicator_epoch = 0;
  uint64_t model_epoch = 0;
  uint64_t generation = 0;
  uint8_t traffic_class = 0;
  uint64_t flow_key = 0;
  std::string workflow_id;
  std::string context_id;
  std::vector<uint64_t> block_ids;
};

// The receiver's answer to a put (and to a probe or set-epoch).
struct Ack {
  uint64_t transfer_id = 0;
  bool committed = false;
  RejectReason reason = RejectReason::kNone;
  uint32_t credits_returned = 0;       // transfer slots returned (1 for a put)
  uint64_t credit_bytes_returned = 0;  // bytes of credit returned (the put's length)
  // Receiver-side events (invariant 3), each recorded separately.
  bool transport_complete = false;
  bool validated = false;
  std::string message;
};

struct Hello {
  uint32_t protocol_version = kProtocolVersion;
  uint64_t sender_incarnation = 0;
};
struct HelloAck {
  uint32_t protocol_version = kProtocolVersion;
  std::string refused;              // non-empty: the worker refused the session, and why
  uint64_t communicator_epoch = 0;  // the worker's incarnation; changes on restart
  uint64_t model_epoch = 0;
  uint64_t capacity_bytes = 0;
  uint64_t max_inflight_bytes = 0;      // credit the worker grants each sender (bytes)
  uint64_t total_inflight_bytes = 0;    // its incast limit: all senders together
  uint32_t max_inflight_transfers = 0;  // puts in flight per sender
};
struct SetEpoch {
  uint64_t transfer_id = 0;
  uint64_t model_epoch = 0;
};
struct ProbeHeader {
  uint64_t transfer_id = 0;
  uint64_t length = 0;
};

std::vector<uint8_t> Encode(const BlockHeader& h);
std::vector<uint8_t> Encode(const GetRequest& r);
std::vector<uint8_t> Encode(const Ack& a);
std::vector<uint8_t> Encode(const Hello& h);
std::vector<uint8_t> Encode(const HelloAck& h);
std::vector<uint8_t> Encode(const SetEpoch& e);
std::vector<uint8_t> Encode(const ProbeHeader& p);
// Decoders check the leading message-type byte. DecodeHello and DecodeHelloAck return
// FailedPrecondition naming both versions when the message speaks another protocol
// version (HelloVersion tells which).
Result<BlockHeader> DecodeBlockHeader(std::span<const uint8_t> in);
Result<GetRequest> DecodeGetRequest(std::span<const uint8_t> in);
Result<Ack> DecodeAck(std::span<const uint8_t> in);
Result<Hello> DecodeHello(std::span<const uint8_t> in);
Result<HelloAck> DecodeHelloAck(std::span<const uint8_t> in);
Result<SetEpoch> DecodeSetEpoch(std::span<const uint8_t> in);
Result<ProbeHeader> DecodeProbeHeader(std::span<const uint8_t> in);
// The type byte of an encoded message (0 when empty).
uint8_t PeekType(std::span<const uint8_t> in);
// The protocol version of an encoded Hello or HelloAck: the field after the type byte, or
// 1 for the unversioned layouts (a 9-byte Hello, a 37-byte HelloAck). InvalidArgument when
// too short to tell.
Result<uint32_t> HelloVersion(std::span<const uint8_t> in);

// XXH3-64 (seed 0) over the descriptors' bytes in order (host memory): a block's
// checksum on the wire, equal to kv_tiers::BlockChecksum of the same bytes.
uint64_t ChecksumOf(const transport::DescriptorList& list);
uint64_t ChecksumOf(const void* data, uint64_t bytes);

// The stateless receiver checks: received length against the header and the block
// sizes (CheckLength), then each block's checksum over `data` (the blocks back to back).
// Owner/epoch/generation need the block table (KvStoreBlocks, kv_store_blocks.h).
RejectReason CheckLength(const BlockHeader& h, uint64_t received);
RejectReason CheckLengthAndChecksum(const BlockHeader& h, uint64_t received, const void* data);
// Each block's checksum over `data`, the blocks laid out back to back across the
// descriptors (a block may span descriptors). kShortLength when the descriptors hold
// fewer bytes than the blocks.
RejectReason CheckBlockChecksums(const std::vector<BlockRef>& blocks,
                                 const transport::DescriptorList& data);

}  // namespace switchyard::kv_store
