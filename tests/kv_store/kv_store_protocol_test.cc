#include "kv_store/kv_store_protocol.h"

#include <gtest/gtest.h>

#include "kv_tiers/prefix_hash.h"

namespace switchyard::kv_store {
namespace {

BlockHeader SampleHeader() {
  BlockHeader h;
  h.traffic_class = v1::THROUGHPUT;
  h.flow_key = 0xfeedface;
  h.transfer_id = 77;
  h.communicator_epoch = 9;
  h.model_epoch = 3;
  h.generation = 2;
  h.length = 300;
  h.workflow_id = "wf_1";
  h.context_id = "ctx_a";
  h.blocks = {{10, 100, 0x1234}, {11, 200, 0x5678}};
  return h;
}

TEST(KvStoreProtocolTest, BlockHeaderRoundTrips) {
  BlockHeader h = SampleHeader();
  auto d = DecodeBlockHeader(Encode(h));
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->transfer_id, 77u);
  EXPECT_EQ(d->flow_key, 0xfeedfaceu);
  EXPECT_EQ(d->communicator_epoch, 9u);
  EXPECT_EQ(d->model_epoch, 3u);
  EXPECT_EQ(d->generation, 2u);
  EXPECT_EQ(d->length, 300u);
  EXPECT_EQ(d->workflow_id, "wf_1");
  EXPECT_EQ(d->context_id, "ctx_a");
  ASSERT_EQ(d->blocks.size(), 2u);
  EXPECT_EQ(d->blocks[1].block_id, 11u);
  EXPECT_EQ(d->blocks[1].bytes, 200u);
  EXPECT_EQ(d->blocks[0].checksum, 0x1234u);
  EXPECT_EQ(d->blocks[1].checksum, 0x5678u);
  EXPECT_EQ(d->type, MsgType::kPutHeader);
  h.type = MsgType::kGetReply;
  h.status = RejectReason::kStaleGeneration;
  auto r = DecodeBlockHeader(Encode(h));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->type, MsgType::kGetReply);
  EXPECT_EQ(r->status, RejectReason::kStaleGeneration);
}

TEST(KvStoreProtocolTest, TruncatedOrPaddedInputIsRejectedNamingTheField) {
  std::vector<uint8_t> bytes = Encode(SampleHeader());
  for (size_t cut : {size_t{0}, size_t{1}, size_t{5}, bytes.size() - 1}) {
    std::vector<uint8_t> part(bytes.begin(), bytes.begin() + cut);
    auto d = DecodeBlockHeader(part);
    ASSERT_FALSE(d.ok()) << cut;
    EXPECT_TRUE(d.status().IsInvalidArgument());
  }
  bytes.push_back(0);
  auto d = DecodeBlockHeader(bytes);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("trailing"), std::string::npos);
}

TEST(KvStoreProtocolTest, WrongTypeAndHugeCountsAreRejected) {
  EXPECT_FALSE(DecodeAck(Encode(Hello{1})).ok());
  EXPECT_FALSE(DecodeHello(Encode(Ack{})).ok());
  BlockHeader h = SampleHeader();
  h.blocks.assign(kMaxBlocksPerTransfer + 1, BlockRef{1, 1});
  auto d = DecodeBlockHeader(Encode(h));
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("blocks"), std::string::npos);
}

// Hello and HelloAck of another version are refused naming both versions; the
// unversioned layout of version 1 (no version field) is recognised by its length.
TEST(KvStoreProtocolTest, HelloOfAnotherVersionIsRefusedNamingBoth) {
  auto other = DecodeHello(Encode(Hello{kProtocolVersion + 1, 7}));
  ASSERT_FALSE(other.ok());
  EXPECT_TRUE(other.status().IsFailedPrecondition()) << other.status();
  const std::string mine = "v" + std::to_string(kProtocolVersion);
  const std::string theirs = "v" + std::to_string(kProtocolVersion + 1);
  EXPECT_NE(other.status().message().find("sender speaks " + theirs), std::string::npos)
      << other.status();
  EXPECT_NE(other.status().message().find("this side speaks " + mine), std::string::npos);

  std::vector<uint8_t> legacy_hello(9, 0);  // type + u64 incarnation, no version
  legacy_hello[0] = static_cast<uint8_t>(MsgType::kHello);
  EXPECT_EQ(HelloVersion(legacy_hello).value(), 1u);
  auto old = DecodeHello(legacy_hello);
  ASSERT_FALSE(old.ok());
  EXPECT_NE(old.status().message().find("sender speaks v1"), std::string::npos) << old.status();

  std::vector<uint8_t> legacy_ack(37, 0);  // type + 4 x u64 + u32, no version
  legacy_ack[0] = static_cast<uint8_t>(MsgType::kHelloAck);
  auto old_ack = DecodeHelloAck(legacy_ack);
  ASSERT_FALSE(old_ack.ok());
  EXPECT_TRUE(old_ack.status().IsFailedPrecondition());
  EXPECT_NE(old_ack.status().message().find("worker speaks v1"), std::string::npos)
      << old_ack.status();
  HelloAck newer;
  newer.protocol_version = kProtocolVersion + 1;
  auto newer_ack = DecodeHelloAck(Encode(newer));
  ASSERT_FALSE(newer_ack.ok());
  EXPECT_NE(newer_ack.status().message().find("worker speaks " + theirs), std::string::npos);
  EXPECT_FALSE(HelloVersion(std::vector<uint8_t>{0x81, 2}).ok());  // too short to tell
}

TEST(KvStoreProtocolTest, SmallMessagesRoundTrip) {
  Ack a{5, true, RejectReason::kNone, 1, 3 << 20, true, true, "ok"};
  auto ad = DecodeAck(Encode(a));
  ASSERT_TRUE(ad.ok());
  EXPECT_TRUE(ad->committed && ad->validated && ad->transport_complete);
  EXPECT_EQ(ad->credits_returned, 1u);
  EXPECT_EQ(ad->credit_bytes_returned, 3u << 20);
  EXPECT_EQ(ad->message, "ok");
  a.reason = RejectReason::kCredit;
  auto refused = DecodeAck(Encode(a));
  ASSERT_TRUE(refused.ok());
  EXPECT_EQ(refused->reason, RejectReason::kCredit);
  EXPECT_EQ(RejectReasonName(refused->reason), "credit");
  HelloAck h;
  h.communicator_epoch = 11;
  h.model_epoch = 2;
  h.capacity_bytes = 1 << 20;
  h.max_inflight_bytes = 1 << 19;
  h.total_inflight_bytes = 3 << 19;
  h.max_inflight_transfers = 8;
  auto hd = DecodeHelloAck(Encode(h));
  ASSERT_TRUE(hd.ok()) << hd.status();
  EXPECT_EQ(hd->protocol_version, kProtocolVersion);
  EXPECT_TRUE(hd->refused.empty());
  EXPECT_EQ(hd->communicator_epoch, 11u);
  EXPECT_EQ(hd->max_inflight_bytes, 1u << 19);
  EXPECT_EQ(hd->total_inflight_bytes, 3u << 19);
  EXPECT_EQ(hd->max_inflight_transfers, 8u);
  auto hello = DecodeHello(Encode(Hello{kProtocolVersion, 42}));
  ASSERT_TRUE(hello.ok()) << hello.status();
  EXPECT_EQ(hello->sender_incarnation, 42u);
  GetRequest g;
  g.transfer_id = 3;
  g.workflow_id = "w";
  g.block_ids = {1, 2, 3};
  auto gd = DecodeGetRequest(Encode(g));
  ASSERT_TRUE(gd.ok());
  EXPECT_EQ(gd->block_ids, (std::vector<uint64_t>{1, 2, 3}));
  auto e = DecodeSetEpoch(Encode(SetEpoch{4, 5}));
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->model_epoch, 5u);
  auto p = DecodeProbeHeader(Encode(ProbeHeader{6, 4096}));
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->length, 4096u);
}

TEST(KvStoreProtocolTest, TagsCarryTypeSenderAndTransfer) {
  transport::Tag t = MakeTag(MsgType::kPutHeader, 0x123456, 0x1'0000'0042ull);
  EXPECT_EQ(TagType(t), MsgType::kPutHeader);
  EXPECT_EQ(TagSender(t), 0x123456u);
  EXPECT_EQ(t & 0xffffffffull, 0x42u);
  // Unsolicited worker messages share the top bit; replies do not.
  EXPECT_EQ(t & kWorkerBit, kWorkerBit);
  EXPECT_EQ(MakeTag(MsgType::kAck, 1, 1) & kWorkerBit, 0u);
}

TEST(KvStoreProtocolTest, LengthAndChecksumChecks) {
  std::vector<uint8_t> data(300);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 7);
  BlockHeader h = SampleHeader();
  h.blocks[0].checksum = ChecksumOf(data.data(), 100);
  h.blocks[1].checksum = ChecksumOf(data.data() + 100, 200);
  EXPECT_EQ(CheckLengthAndChecksum(h, 300, data.data()), RejectReason::kNone);
  EXPECT_EQ(CheckLengthAndChecksum(h, 299, data.data()), RejectReason::kShortLength);
  data[217] ^= 1;  // second block only
  EXPECT_EQ(CheckLengthAndChecksum(h, 300, data.data()), RejectReason::kBadChecksum);
  data[217] ^= 1;
  std::swap(h.blocks[0].checksum, h.blocks[1].checksum);  // checksums of the wrong blocks
  EXPECT_EQ(CheckLengthAndChecksum(h, 300, data.data()), RejectReason::kBadChecksum);
  std::swap(h.blocks[0].checksum, h.blocks[1].checksum);
  h.blocks[0].bytes = 99;  // sizes no longer add up to the length
  EXPECT_EQ(CheckLengthAndChecksum(h, 300, data.data()), RejectReason::kShortLength);
  // Checksum over descriptors equals the checksum of the concatenation.
  std::vector<uint8_t> a(100, 1), b(50, 2), ab(a);
  ab.insert(ab.end(), b.begin(), b.end());
  EXPECT_EQ(ChecksumOf(transport::DescriptorList{{a.data(), 100}, {b.data(), 50}}),
            ChecksumOf(ab.data(), ab.size()));
}

// The requester's check: blocks laid out back to back across descriptors that do not
// follow block boundaries (a block may span two or three of them).
TEST(KvStoreProtocolTest, BlockChecksumsAcrossDescriptors) {
  std::vector<uint8_t> data(1000);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 13 + 5);
  std::vector<BlockRef> blocks = {{1, 300, 0}, {2, 450, 0}, {3, 250, 0}};
  uint64_t off = 0;
  for (auto& b : blocks) {
    b.checksum = ChecksumOf(data.data() + off, b.bytes);
    off += b.bytes;
  }
  // Cuts at 120, 310, 330 and 900: block 2 spans three descriptors, block 3 two.
  transport::DescriptorList pieces = {{data.data(), 120},
                                      {data.data() + 120, 190},
                                      {data.data() + 310, 20},
                                      {data.data() + 330, 570},
                                      {data.data() + 900, 100}};
  EXPECT_EQ(CheckBlockChecksums(blocks, pieces), RejectReason::kNone);
  EXPECT_EQ(CheckBlockChecksums(blocks, {{data.data(), data.size()}}), RejectReason::kNone);
  pieces.back().length = 99;  // one byte short
  EXPECT_EQ(CheckBlockChecksums(blocks, pieces), RejectReason::kShortLength);
  pieces.back().length = 100;
  data[320] ^= 0x40;  // inside block 2, in the 20-byte descriptor
  EXPECT_EQ(CheckBlockChecksums(blocks, pieces), RejectReason::kBadChecksum);
  data[320] ^= 0x40;
  data[999] ^= 1;  // last byte of block 3
  EXPECT_EQ(CheckBlockChecksums(blocks, pieces), RejectReason::kBadChecksum);
}

// The wire checksum and the BlockManager's stored block checksum are one function, so a
// block's stored checksum can be sent as is.
TEST(KvStoreProtocolTest, WireChecksumIsTheBlockChecksum) {
  std::vector<uint8_t> data(1 << 20);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i ^ (i >> 9));
  EXPECT_EQ(ChecksumOf(data.data(), data.size()),
            kv_tiers::BlockChecksum(data.data(), data.size()));
  EXPECT_EQ(ChecksumOf(data.data(), 4096), kv_tiers::BlockChecksum(data.data(), 4096));
}

}  // namespace
}  // namespace switchyard::kv_store
