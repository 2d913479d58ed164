// The direct put messages of the worker control protocol: an order and its outcome
// survive the trip through PutBlocks / PutBlocksDone field for field, and an order that
// cannot be carried out as sent is refused naming the field.
#include "workers/control_msgs.h"

#include <gtest/gtest.h>

#include <functional>

namespace switchyard::workers {
namespace {

namespace kv_store = kv_store;

kv_store::DirectPutOrder AnOrder() {
  kv_store::DirectPutOrder o;
  o.order_id = 7;
  o.transfer_id = 70;
  o.source = {"10.0.0.1:5000", "ucx", {}, 11, 3, "tenant", "hbm-w0"};
  o.source.transport_config.params["TLS"] = "tcp";
  o.destination = {"10.0.0.2:5001", "ucx", {}, 22, 3, "tenant", "hbm-w1"};
  o.generation = 4;
  o.traffic_class = v1::BACKGROUND;
  o.flow_key = 70;
  o.timeout = Millis(2500);
  v1::KvBlockMeta meta;
  meta.set_workflow_id("wf");
  meta.set_context_id("main");
  meta.set_index(2);
  o.blocks = {{5, 2, 9, 4096, 0xabcdefull, meta}, {6, 1, 10, 2048, std::nullopt, {}}};
  return o;
}

TEST(ControlMsgs, APutOrderSurvivesTheTrip) {
  const kv_store::DirectPutOrder o = AnOrder();
  v1::PutBlocks m;
  ToPutBlocks(o, &m);
  auto back = FromPutBlocks(m);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->order_id, 7u);
  EXPECT_EQ(back->transfer_id, 70u);
  EXPECT_EQ(back->source.address, o.source.address);
  EXPECT_EQ(back->source.transport_config.params.at("TLS"), "tcp");
  EXPECT_EQ(back->source.communicator_epoch, 11u);
  EXPECT_EQ(back->destination.communicator_epoch, 22u);
  EXPECT_EQ(back->destination.model_epoch, 3u);
  EXPECT_EQ(back->destination.workflow_id, "tenant");
  EXPECT_EQ(back->destination.context_id, "hbm-w1");
  EXPECT_EQ(back->generation, 4u);
  EXPECT_EQ(back->traffic_class, v1::BACKGROUND);
  EXPECT_EQ(back->timeout, Millis(2500));
  ASSERT_EQ(back->blocks.size(), 2u);
  EXPECT_EQ(back->blocks[0].source_block_id, 5u);
  EXPECT_EQ(back->blocks[0].source_generation, 2u);
  EXPECT_EQ(back->blocks[0].block_id, 9u);
  EXPECT_EQ(back->blocks[0].checksum, 0xabcdefull);
  EXPECT_EQ(back->blocks[0].meta.context_id(), "main");
  EXPECT_FALSE(back->blocks[1].checksum.has_value()) << "an unknown checksum stays unknown";
}

TEST(ControlMsgs, AnOrderThatCannotBeCarriedOutIsRefusedNamingTheField) {
  struct Case {
    std::function<void(v1::PutBlocks*)> spoil;
    const char* says;
  };
  const Case cases[] = {
      {[](v1::PutBlocks* m) { m->clear_blocks(); }, "no blocks"},
      {[](v1::PutBlocks* m) { m->mutable_destination()->clear_address(); }, "destination.address"},
      {[](v1::PutBlocks* m) { m->set_traffic_class(v1::TRAFFIC_CLASS_UNSPECIFIED); },
       "traffic_class"},
      {[](v1::PutBlocks* m) { m->mutable_blocks(1)->set_bytes(0); }, "bytes 0"},
  };
  for (const Case& c : cases) {
    v1::PutBlocks m;
    ToPutBlocks(AnOrder(), &m);
    c.spoil(&m);
    auto r = FromPutBlocks(m);
    EXPECT_TRUE(r.status().IsInvalidArgument()) << c.says << ": " << r.status();
    EXPECT_NE(r.status().message().find(c.says), std::string::npos) << r.status();
  }
}

// The destination's events come back apart (invariant 3), with each committed block's
// checksum; a failure keeps its code and says it happened on the worker.
TEST(ControlMsgs, AnOutcomeSurvivesTheTrip) {
  kv_store::DirectPutOutcome o;
  o.order_id = 7;
  o.events.posted = o.events.receiver_transport_complete = o.events.validated = true;
  o.events.committed = true;
  o.blocks = {{9, 4096, 0xabcdefull}};
  o.bytes = 4096;
  o.credit_retries = 2;
  o.took = Millis(3);
  v1::PutBlocksDone m;
  ToPutBlocksDone(o, &m);
  kv_store::DirectPutOutcome back = FromPutBlocksDone(m);
  EXPECT_TRUE(back.status.ok()) << back.status;
  EXPECT_TRUE(back.events.posted && back.events.receiver_transport_complete);
  EXPECT_TRUE(back.events.validated && back.events.committed && !back.events.rejected);
  ASSERT_EQ(back.blocks.size(), 1u);
  EXPECT_EQ(back.blocks[0].block_id, 9u);
  EXPECT_EQ(back.blocks[0].checksum, 0xabcdefull);
  EXPECT_EQ(back.bytes, 4096u);
  EXPECT_EQ(back.credit_retries, 2u);
  EXPECT_EQ(back.took, Millis(3));

  kv_store::DirectPutOutcome failed;
  failed.order_id = 8;
  failed.status = Status::Unavailable("direct put: cannot reach the destination store");
  failed.unreachable = true;
  v1::PutBlocksDone m2;
  ToPutBlocksDone(failed, &m2);
  back = FromPutBlocksDone(m2);
  EXPECT_TRUE(back.status.IsUnavailable()) << back.status;
  EXPECT_NE(back.status.message().find("on the worker: direct put: cannot reach"),
            std::string::npos)
      << back.status;
  EXPECT_TRUE(back.unreachable);
  EXPECT_FALSE(back.events.committed);
}

}  // namespace
}  // namespace switchyard::workers
