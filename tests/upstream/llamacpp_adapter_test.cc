// Contract tests of the llama.cpp adapter: slots, and slot files moved in order.
#include <atomic>
#include <string>

#include <gtest/gtest.h>

#include "tests/upstream/steering_fixture.h"

namespace switchyard::upstream::testing {
namespace {

class LlamaCppAdapterTest : public SteeringFixture {
 protected:
  void SetUp() override {
    AddUpstreams(1);
    for (int slot : {0, 1}) {  // what llama-server answers (llama.cpp 82bb485)
      const std::string route = "POST /slots/" + std::to_string(slot) + "?action=";
      up().Answer(route + "save", 200,
                  json{{"id_slot", slot},
                       {"filename", "f.bin"},
                       {"n_saved", 1526},
                       {"n_written", 1587120},
                       {"timings", {{"save_ms", 1.4}}}}
                      .dump());
      up().Answer(route + "restore", 200,
                  json{{"id_slot", slot},
                       {"filename", "f.bin"},
                       {"n_restored", 1526},
                       {"n_read", 1587120},
                       {"timings", {{"restore_ms", 0.8}}}}
                      .dump());
      up().Answer(route + "erase", 200, json{{"id_slot", slot}, {"n_erased", 1526}}.dump());
    }
  }
  // Slots from GET /props, pinning declared (`slots`); slot files declared when `files`.
  void Start(int slots, bool files) {
    up().Answer("GET /props", 200, LlamaProps(slots));
    Capabilities declared;
    declared.slots = Declared();
    if (files) declared.slot_files = Declared();
    Steer(UpstreamKind::kLlamaCpp, declared);
    Probe();
  }
  // The session's slot file name, as the save of slot `slot` sent it.
  std::string SavedFile(int slot) {
    return Last("POST /slots/" + std::to_string(slot) + "?action=save")["filename"];
  }
};

TEST_F(LlamaCppAdapterTest, ProbeReadsSlots) {
  json slots = json::array();
  for (int id : {0, 1, 2}) {
    slots.push_back(
        {{"id", id}, {"n_ctx", 4096}, {"speculative", false}, {"is_processing", false}});
  }
  up().Answer("GET /slots", 200, slots.dump());
  Steer(UpstreamKind::kLlamaCpp);
  Capabilities caps = Probe();  // /props answers 404 here: /slots counts them
  EXPECT_FALSE(caps.slots.on);  // counted, but pinning needs `slots` declared
  EXPECT_EQ(caps.total_slots, 3);
  EXPECT_EQ(caps.slots.source,
            "GET /slots (3 slots); sessions pinned to slots only when `slots` is declared");
  EXPECT_TRUE(caps.prefix_caching.on);
  EXPECT_FALSE(caps.slot_files.on);  // needs --slot-save-path: declared only
}

TEST_F(LlamaCppAdapterTest, SessionsArePinnedToFreeSlots) {
  Start(2, /*files=*/false);
  SessionRef a = steering_->Session("a", 0);
  SessionRef b = steering_->Session("b", 0);
  SessionRef c = steering_->Session("c", 0);
  EXPECT_EQ(a.slot, 0);
  EXPECT_EQ(b.slot, 1);
  EXPECT_EQ(c.slot, -1);  // every slot held
  ASSERT_EQ(Turn(a, ChatBody("x")), 200);
  json body = Last("POST /v1/chat");
  EXPECT_EQ(body["id_slot"], 0);
  EXPECT_EQ(body["cache_prompt"], true);
  ASSERT_EQ(Turn(c, ChatBody("y")), 200);
  EXPECT_FALSE(Last("POST /v1/chat").contains("id_slot"));
  steering_->OnRelease(a);  // nothing to erase without slot files: the slot is free at once
  EXPECT_EQ(steering_->Session("d", 0).slot, 0);
}

TEST_F(LlamaCppAdapterTest, DemoteSavesThenErasesAndPrefetchRestoresBeforeTheTurn) {
  Start(2, /*files=*/true);
  SessionRef s = steering_->Session("tenant/s:1", 0);
  ASSERT_EQ(s.slot, 0);
  const json request = ChatBody("q");
  ASSERT_EQ(Turn(s, request), 200);

  up().Hold("POST /slots/0?action=save");
  up().Hold("POST /slots/0?action=restore");
  steering_->OnWait(s, KvAction::kDemote);
  ASSERT_TRUE(steering_->OnPrefetch(s, {"/v1/chat/completions", request, "a"}).ok());
  ASSERT_TRUE(up().WaitFor("POST /slots/0?action=save", 1));
  auto went = std::make_shared<std::atomic<bool>>(false);
  steering_->BeforeTurn(s, [went] { *went = true; });
  EXPECT_FALSE(went->load());
  up().Release("POST /slots/0?action=save");
  ASSERT_TRUE(up().WaitFor("POST /slots/0?action=restore", 1));
  EXPECT_FALSE(went->load());  // the restore is held: the turn waits for it
  up().ReleaseHeld();
  ASSERT_TRUE(switchyard::testing::WaitUntil([&] { return went->load(); }));
  ASSERT_EQ(Forward(s, ChatBody("next")), 200);

  EXPECT_EQ(Routes(),
            (std::vector<std::string>{"POST /v1/chat/completions", "POST /slots/0?action=save",
                                      "POST /slots/0?action=erase", "POST /slots/0?action=restore",
                                      "POST /v1/chat/completions"}));
  const std::string file = SavedFile(0);
  EXPECT_EQ(file, "switchyard-tenant_s_1-" + file.substr(22, 16) + ".bin");
  EXPECT_EQ(Last("POST /slots/0?action=restore")["filename"], file);
  EXPECT_EQ(up().requests("POST /slots/0?action=erase")[0].body, "");
  EXPECT_EQ(Last("POST /v1/chat")["id_slot"], 0);
  SteeringCounters c = steering_->counters(0);
  EXPECT_EQ(c.saves, 1u);
  EXPECT_EQ(c.erases, 1u);
  EXPECT_EQ(c.restores, 1u);
}

TEST_F(LlamaCppAdapterTest, DiscardErasesAndPrefetchWarmsTheSlot) {
  Start(2, /*files=*/true);
  SessionRef s = steering_->Session("s", 0);
  const json request = ChatBody("q");
  ASSERT_EQ(Turn(s, request), 200);
  steering_->OnWait(s, KvAction::kDiscard);
  ASSERT_TRUE(steering_->OnPrefetch(s, {"/v1/chat/completions", request, "a"}).ok());
  ASSERT_TRUE(up().WaitFor("POST /v1/chat", 2));
  json warm = Last("POST /v1/chat");
  EXPECT_EQ(warm["id_slot"], 0);  // recomputed into the session's slot
  EXPECT_EQ(warm["max_tokens"], 1);
  up().Hold("POST /slots/0?action=erase");
  steering_->OnRelease(s);
  ASSERT_TRUE(up().WaitFor("POST /slots/0?action=erase", 2));
  // The slot stays held until its erase is done: a new session cannot lose its KV to it.
  EXPECT_EQ(steering_->Session("t", 0).slot, 1);
  up().ReleaseHeld();
  EXPECT_EQ(Routes(),
            (std::vector<std::string>{"POST /v1/chat/completions", "POST /slots/0?action=erase",
                                      "POST /v1/chat/completions", "POST /slots/0?action=erase"}));
}

TEST_F(LlamaCppAdapterTest, FailedSaveKeepsTheKv) {
  Start(2, /*files=*/true);
  up().Answer("POST /slots/0?action=save", 501,
              R"({"error":{"code":501,"message":"This server does not support slots action. )"
              R"(Start it with `--slot-save-path`","type":"not_supported_error"}})");
  SessionRef s = steering_->Session("s", 0);
  ASSERT_EQ(Turn(s, ChatBody("q")), 200);
  steering_->OnWait(s, KvAction::kDemote);
  ASSERT_EQ(Turn(s, ChatBody("next")), 200);  // goes on once the save failed
  EXPECT_EQ(Routes(),
            (std::vector<std::string>{"POST /v1/chat/completions", "POST /slots/0?action=save",
                                      "POST /v1/chat/completions"}));
  EXPECT_EQ(steering_->counters(0).failures, 1u);
  EXPECT_EQ(steering_->counters(0).erases, 0u);
}

TEST_F(LlamaCppAdapterTest, NothingUnadvertisedReachesTheWire) {
  // No slots at all; slots probed but neither pinning nor slot files declared (a server
  // under llama-server's defaults, whose idle slots are emptied into its RAM cache).
  for (int slots : {0, 2}) {
    SCOPED_TRACE(slots);
    steering_.reset();
    client_.reset();
    upstreams_.clear();
    SetUp();
    if (slots > 0) up().Answer("GET /props", 200, LlamaProps(slots));
    up().Answer("GET /slots", 501,
                R"({"error":{"code":501,"message":"This server does not support slots )"
                R"(endpoint. Start it with `--slots`","type":"not_supported_error"}})");
    Steer(UpstreamKind::kLlamaCpp);
    Probe();
    SessionRef s = steering_->Session("s", 0);
    const json request = ChatBody("hi");
    for (KvAction a : {KvAction::kKeep, KvAction::kDemote, KvAction::kDiscard}) {
      ASSERT_EQ(Turn(s, request), 200);
      steering_->OnWait(s, a);
    }
    steering_->OnRelease(s);
    EXPECT_TRUE(up().requests("POST /slots").empty());
    for (const auto& r : up().requests("POST /v1/chat")) EXPECT_FALSE(r.json().contains("id_slot"));
  }
}

}  // namespace
}  // namespace switchyard::upstream::testing
