// The llama.cpp adapter against a real llama-server (tests/upstream/llama_server.h): the
// requests it makes through Steering are the ones the engine accepts, and they move the
// session's KV as the scheduler decided: a demoted slot is saved to a file and emptied, its
// restore brings the prompt back so the next turn reuses it, and without the restore the
// next turn is computed anew. The model has random weights (scripts/make_random_gguf.py):
// its answers are gibberish, only the cache accounting is checked.
//
// Runs only where $SY_LLAMA_SERVER names a llama-server binary; skips otherwise (CI).
// With SY_LLAMA_SERVER_TIMINGS=1 each test also prints its resumed turn's timings (for
// bench/RESULTS.md; nothing asserts on them); SY_LLAMA_GGUF_ARGS gives the model another
// shape (e.g. "--layers 8 --hidden 1024 --heads 16 --kv-heads 4 --ffn 2816").
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/upstream/llama_server.h"
#include "upstream/steering.h"

namespace switchyard::upstream::testing {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr int kPromptChars = 1500;

// `n` characters of digits and spaces: one token each, in the byte-level vocabularies the
// GGUF script uses (Qwen3 splits digits; the byte fallback has no merges).
std::string Digits(int n, uint32_t seed) {
  std::string text;
  while (static_cast<int>(text.size()) < n) {
    seed = seed * 1664525u + 1013904223u;
    text += static_cast<char>(text.size() % 10 == 9 ? ' ' : '0' + (seed >> 24) % 10);
  }
  return text;
}

json FirstTurn() {
  return json{{"model", "random"},
              {"messages",
               {{{"role", "system"}, {"content", "You are a test agent."}},
                {{"role", "user"}, {"content", Digits(kPromptChars, 1)}}}},
              {"max_tokens", 4},
              {"temperature", 0}};
}

// The turn after the tool: the first turn, its answer, the tool's result; one token.
json NextTurn(json first, const std::string& answer) {
  first["messages"].push_back({{"role", "assistant"}, {"content", answer}});
  first["messages"].push_back({{"role", "user"}, {"content", "result: " + Digits(200, 2)}});
  first["max_tokens"] = 1;
  return first;
}

std::string Content(const LlamaAnswer& a) {
  return a.body["choices"][0]["message"].value("content", std::string());
}
int64_t PromptTokens(const LlamaAnswer& a) { return a.body["usage"].value("prompt_tokens", -1); }
// The cached prompt tokens, as the OpenAI usage says them and as llama-server's timings do.
int64_t CachedTokens(const LlamaAnswer& a) {
  return a.body["usage"]["prompt_tokens_details"].value("cached_tokens", int64_t{-1});
}
int64_t CacheN(const LlamaAnswer& a) { return a.body["timings"].value("cache_n", int64_t{-1}); }

double MsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

bool PrintTimings() {
  const char* v = std::getenv("SY_LLAMA_SERVER_TIMINGS");
  return v != nullptr && std::string(v) == "1";
}

class LlamaCppServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string binary = LlamaServerBinary();
    if (binary.empty()) {
      GTEST_SKIP() << "SY_LLAMA_SERVER is not set: it names the llama-server binary these "
                      "tests run (CI has none)";
    }
    const std::string error = server_.Start(binary);
    ASSERT_EQ(error, "");
    SteeringUpstream setup;
    setup.kind = UpstreamKind::kLlamaCpp;
    setup.declared.slot_files = {true, "configured"};  // the server has --slot-save-path
    setup.declared.slots = {true, "configured"};       // ... and keeps idle slots
    auto steering = Steering::Create(server_.client(), {setup});
    ASSERT_TRUE(steering.ok()) << steering.status().ToString();
    steering_ = std::move(steering).value();

    auto probed = std::make_shared<std::promise<Capabilities>>();
    auto caps = probed->get_future();
    steering_->Probe(0, [probed](const Capabilities& c) { probed->set_value(c); });
    ASSERT_EQ(caps.wait_for(std::chrono::seconds(60)), std::future_status::ready);
    const Capabilities c = caps.get();
    ASSERT_TRUE(c.slots.on);
    EXPECT_EQ(c.total_slots, 2);
    EXPECT_EQ(c.slots.source, "configured");
    EXPECT_TRUE(c.slot_files.on);
  }

  // Returns once every call the session's next turn must follow is done (BeforeTurn).
  void Settle(const SessionRef& s) {
    auto go = std::make_shared<std::promise<void>>();
    auto went = go->get_future();
    steering_->BeforeTurn(s, [go] { go->set_value(); });
    ASSERT_EQ(went.wait_for(std::chrono::seconds(60)), std::future_status::ready);
  }

  // A turn as proxy mode forwards it: BeforeTurn's go, Decorate, forward. `ms`: the
  // forward's wall time (the answer is one token: about the time to it).
  LlamaAnswer Turn(const SessionRef& s, json body, double* ms = nullptr) {
    Settle(s);
    std::map<std::string, std::string> headers;
    steering_->Decorate(s, 0, &body, &headers);
    EXPECT_EQ(body["id_slot"], s.slot);
    EXPECT_EQ(body["cache_prompt"], true);
    const auto start = Clock::now();
    LlamaAnswer a = server_.Call("POST", "/v1/chat/completions", body);
    if (ms != nullptr) *ms = MsSince(start);
    EXPECT_EQ(a.status, 200) << a.body.dump() << "\n" << server_.log();
    return a;
  }

  // The tokens slot `id` holds, as GET /slots shows them (0 when it shows none).
  int64_t SlotTokens(int id) {
    LlamaAnswer a = server_.Call("GET", "/slots");
    EXPECT_EQ(a.status, 200) << a.body.dump();
    if (!a.body.is_array()) return -1;
    for (const json& slot : a.body) {
      if (slot.value("id", -1) == id) return slot.value("n_prompt_tokens", int64_t{0});
    }
    return -1;
  }

  std::vector<std::filesystem::path> SlotFiles() {
    std::vector<std::filesystem::path> files;
    for (const auto& e : std::filesystem::directory_iterator(server_.slot_dir())) {
      files.push_back(e.path());
    }
    return files;
  }

  // Turn one of session `key` in slot 0, then its wait starts with `decision`; the first
  // turn's request and answer.
  std::pair<json, LlamaAnswer> FirstTurnThenWait(const std::string& key, KvAction decision,
                                                 double* wait_ms) {
    session_ = steering_->Session(key, 0);
    EXPECT_EQ(session_.slot, 0);
    const json first = FirstTurn();
    LlamaAnswer a = Turn(session_, first);
    EXPECT_GE(PromptTokens(a), kPromptChars);
    EXPECT_GE(SlotTokens(0), PromptTokens(a));
    const auto start = Clock::now();
    steering_->OnWait(session_, decision);
    Settle(session_);
    *wait_ms = MsSince(start);
    EXPECT_EQ(SlotTokens(0), 0);  // erased after the save, or discarded
    return {first, a};
  }

  void Report(const char* mode, const LlamaAnswer& a, double turn_ms, double wait_ms,
              double prefetch_ms) {
    if (!PrintTimings()) return;
    std::printf(
        "[timings] %s: prompt_tokens=%lld cached=%lld server_prompt_ms=%.1f turn_wall_ms=%.1f "
        "wait_calls_ms=%.1f prefetch_ms=%.1f\n",
        mode, static_cast<long long>(PromptTokens(a)), static_cast<long long>(CachedTokens(a)),
        a.body["timings"].value("prompt_ms", -1.0), turn_ms, wait_ms, prefetch_ms);
  }

  LlamaServer server_;
  std::unique_ptr<Steering> steering_;
  SessionRef session_;
};

TEST_F(LlamaCppServerTest, DemoteSavesAndErasesThenRestoreServesTheNextTurnFromCache) {
  double wait_ms = 0;
  auto [first, a1] = FirstTurnThenWait("tenant/agent:1", KvAction::kDemote, &wait_ms);
  const std::vector<std::filesystem::path> files = SlotFiles();
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0].filename().string().rfind("switchyard-tenant_agent_1-", 0), 0u);
  EXPECT_GT(std::filesystem::file_size(files[0]), 0u);

  const auto start = Clock::now();
  ASSERT_TRUE(steering_->OnPrefetch(session_, {"/v1/chat/completions", first, Content(a1)}).ok());
  Settle(session_);
  const double prefetch_ms = MsSince(start);
  EXPECT_GE(SlotTokens(0), PromptTokens(a1));  // the restore refilled the slot

  double turn_ms = 0;
  LlamaAnswer a2 = Turn(session_, NextTurn(first, Content(a1)), &turn_ms);
  EXPECT_GE(CachedTokens(a2), PromptTokens(a1)) << a2.body.dump();
  EXPECT_GE(CacheN(a2), PromptTokens(a1));
  Report("restore", a2, turn_ms, wait_ms, prefetch_ms);

  SteeringCounters c = steering_->counters(0);
  EXPECT_EQ(c.saves, 1u);
  EXPECT_EQ(c.erases, 1u);
  EXPECT_EQ(c.restores, 1u);
  EXPECT_EQ(c.failures, 0u);

  steering_->OnRelease(session_);  // the release erases the slot
  EXPECT_TRUE(switchyard::testing::WaitUntil([&] { return SlotTokens(0) == 0; }));
}

TEST_F(LlamaCppServerTest, DemoteWithoutRestoreComputesTheNextTurnAnew) {
  double wait_ms = 0;
  auto [first, a1] = FirstTurnThenWait("s", KvAction::kDemote, &wait_ms);
  double turn_ms = 0;
  LlamaAnswer a2 = Turn(session_, NextTurn(first, Content(a1)), &turn_ms);
  EXPECT_GT(PromptTokens(a2), PromptTokens(a1));
  EXPECT_EQ(CachedTokens(a2), 0) << a2.body.dump();
  EXPECT_EQ(CacheN(a2), 0);
  Report("recompute", a2, turn_ms, wait_ms, 0);
  EXPECT_EQ(steering_->counters(0).failures, 0u);
}

TEST_F(LlamaCppServerTest, DiscardErasesThenTheWarmupRecomputesIntoTheSlot) {
  double wait_ms = 0;
  auto [first, a1] = FirstTurnThenWait("s", KvAction::kDiscard, &wait_ms);
  EXPECT_TRUE(SlotFiles().empty());  // a discard saves nothing

  const auto start = Clock::now();
  ASSERT_TRUE(steering_->OnPrefetch(session_, {"/v1/chat/completions", first, Content(a1)}).ok());
  ASSERT_TRUE(switchyard::testing::WaitUntil(
      [&] { return steering_->counters(0).warmups_done == 1; }));  // a background call
  const double prefetch_ms = MsSince(start);
  EXPECT_GE(SlotTokens(0), PromptTokens(a1));

  double turn_ms = 0;
  LlamaAnswer a2 = Turn(session_, NextTurn(first, Content(a1)), &turn_ms);
  EXPECT_GE(CachedTokens(a2), PromptTokens(a1)) << a2.body.dump();
  steering_->ReportCachedTokens(session_, CachedTokens(a2));
  Report("warm-up", a2, turn_ms, wait_ms, prefetch_ms);
  SteeringCounters c = steering_->counters(0);
  EXPECT_EQ(c.warmups_hit, 1u);
  EXPECT_EQ(c.erases, 1u);
  EXPECT_EQ(c.failures, 0u);
}

}  // namespace
}  // namespace switchyard::upstream::testing
