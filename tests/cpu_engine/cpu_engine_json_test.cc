// CpuEngine's JSON-constrained decoding (SequenceSpec::json_schema) on a random-weights
// tiny model with a byte vocabulary.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "base/virtual_event_loop.h"
#include "cpu_engine/cpu_engine.h"
#include "cpu_engine/json_constraint.h"
#include "tests/common/wait_until.h"
#include "tests/cpu_engine/cpu_test_util.h"

namespace switchyard::cpu_engine {
namespace {

using nlohmann::json;
using testing::ByteText;
using testing::TinyModel;

constexpr const char* kSchema = R"({"type": "object", "properties": {
  "path": {"type": "string"}, "lines": {"type": "integer"}, "mode": {"enum": ["r", "w"]},
  "force": {"type": "boolean"}, "opts": {"type": "object"}},
  "required": ["path", "lines", "mode", "force", "opts"]})";
// Only bounded constructs: every run closes its object within a few dozen tokens.
constexpr const char* kShortSchema = R"({"properties": {"ok": {"type": "boolean"},
  "level": {"enum": ["low", "high"]}, "none": {"type": "null"}}, "required": ["ok", "level", "none"]})";

// The byte vocabulary: ids 0-255 are bytes, the rest (BOS, EOS, padding) special.
std::vector<std::string> ByteTokens() {
  std::vector<std::string> t(static_cast<size_t>(TinyModel().shape().vocab_size));
  for (int b = 0; b < 256; ++b) t[static_cast<size_t>(b)] = std::string(1, static_cast<char>(b));
  return t;
}

// Printable ASCII, newline, tab and the stop id: how a random-weights model's text is kept
// echoable.
std::vector<bool> AsciiMask() {
  std::vector<bool> m(static_cast<size_t>(TinyModel().shape().vocab_size), false);
  for (int b = 32; b < 127; ++b) m[static_cast<size_t>(b)] = true;
  m['\n'] = m['\t'] = true;
  m[static_cast<size_t>(TinyModel().shape().eos_id)] = true;
  return m;
}

class JsonHarness {
 public:
  explicit JsonHarness(bool token_bytes = true, std::vector<std::vector<bool>> masks = {}) {
    executors::EngineLimits l;
    l.block_tokens = 16;
    l.pool_blocks = 256;
    l.max_num_seqs = 16;
    l.max_num_batched_tokens = 64;
    CpuEngine::Options o;
    o.model = &TinyModel();
    o.tokens = &log_;
    o.token_masks = std::move(masks);
    if (token_bytes) o.token_bytes = ByteTokens();
    auto e = CpuEngine::Create(&loop_, 0, l, o);
    EXPECT_TRUE(e.ok()) << e.status().ToString();
    engine_ = std::move(*e);
    engine_->SetListener([this](const executors::StepReport& r) {
      for (const executors::SeqProgress& p : r.seqs) {
        if (p.token >= 0) out_[p.key].push_back(p.token);
        if (p.finished) status_[p.key] = p.status;
      }
    });
  }
  CpuEngine& engine() { return *engine_; }
  bool RunUntil(const std::function<bool()>& done) {
    return ::switchyard::testing::WaitUntil(
        [&] {
          loop_.Run();
          return done();
        },
        ::switchyard::testing::kWaitSeconds, std::chrono::microseconds(200));
  }
  bool Finish(const std::set<std::string>& keys) {
    return RunUntil([&] {
      for (const std::string& k : keys)
        if (!status_.count(k)) return false;
      return true;
    });
  }
  const std::vector<int32_t>& out(const std::string& key) { return out_[key]; }
  Status status(const std::string& key) { return status_[key]; }

 private:
  VirtualEventLoop loop_;
  TokenLog log_;
  std::unique_ptr<CpuEngine> engine_;
  std::map<std::string, std::vector<int32_t>> out_;
  std::map<std::string, Status> status_;
};

executors::SequenceSpec Constrained(const std::string& key, const std::string& schema,
                                    int64_t max_out, double temperature = 0, uint64_t seed = 0) {
  executors::SequenceSpec s;
  s.key = key;
  s.contexts.push_back(executors::SeqContext{key + "-ctx", 0, false});  // created by the prefill
  s.prefill_tokens = 12;
  for (int i = 0; i < 12; ++i) s.prompt_token_ids.push_back("Call a tool:"[i]);
  s.max_output_tokens = max_out;
  s.temperature = temperature;
  s.sampling_seed = seed;
  s.json_schema = schema;
  return s;
}

// The output is a valid prefix of the schema's object; closed by its Completion() when the
// run stopped short, it parses to an object with every required key. Returns whether the
// output closed the object by itself.
bool ExpectObject(const std::string& schema, const std::string& text,
                  const std::vector<std::string>& keys) {
  SCOPED_TRACE("output: " + text);
  auto c = JsonObjectConstraint::FromSchema(schema);
  EXPECT_TRUE(c.ok());
  EXPECT_TRUE(c->Feed(text)) << "the output left the language";
  const bool closed = c->complete();
  const std::string whole = text + c->Completion();
  json j;
  try {
    j = json::parse(whole);
  } catch (const json::exception& e) {
    ADD_FAILURE() << whole << ": " << e.what();
    return closed;
  }
  EXPECT_TRUE(j.is_object());
  for (const std::string& k : keys) EXPECT_TRUE(j.contains(k)) << k;
  return closed;
}

std::vector<int32_t> RunToEnd(JsonHarness& h, const executors::SequenceSpec& s) {
  Status st = h.engine().Admit(s);
  EXPECT_TRUE(st.ok()) << st.ToString();
  EXPECT_TRUE(h.Finish({s.key}));
  EXPECT_TRUE(h.status(s.key).ok()) << h.status(s.key).ToString();
  return h.out(s.key);
}

TEST(CpuEngineJsonTest, OutputIsAnObjectOfTheRequiredKeysGreedyAndSampled) {
  const std::vector<std::string> keys = {"path", "lines", "mode", "force", "opts"};
  for (double temperature : {0.0, 1.0}) {
    for (uint64_t seed : {1, 2, 3}) {
      JsonHarness h(true, {AsciiMask()});
      const std::vector<int32_t> out =
          RunToEnd(h, Constrained("wf/n", kSchema, 96, temperature, seed));
      for (int32_t t : out) EXPECT_TRUE(t < 256) << "a special token in the output: " << t;
      ExpectObject(kSchema, ByteText(out), keys);
    }
  }
}

TEST(CpuEngineJsonTest, TheClosingBraceEndsTheSequence) {
  for (uint64_t seed : {1, 2, 3, 4}) {
    JsonHarness h(true, {AsciiMask()});
    const std::vector<int32_t> out = RunToEnd(h, Constrained("wf/n", kShortSchema, 200, 1.0, seed));
    ASSERT_FALSE(out.empty());
    EXPECT_EQ(out.back(), '}');
    EXPECT_TRUE(ExpectObject(kShortSchema, ByteText(out), {"ok", "level", "none"}))
        << "stopped before closing";
  }
}

TEST(CpuEngineJsonTest, WithoutAStaticMaskTheBytesStayValidUtf8) {
  for (uint64_t seed : {5, 6}) {
    JsonHarness h(true);
    const std::vector<int32_t> out = RunToEnd(h, Constrained("wf/n", kSchema, 128, 1.5, seed));
    ExpectObject(kSchema, ByteText(out), {"path", "lines", "mode", "force", "opts"});
  }
}

TEST(CpuEngineJsonTest, SameSeedSameOutputAloneOrInABatch) {
  JsonHarness alone(true, {AsciiMask()});
  const std::vector<int32_t> ref = RunToEnd(alone, Constrained("wf/n", kSchema, 64, 1.0, 11));
  JsonHarness mixed(true, {AsciiMask()});
  for (int i = 0; i < 3; ++i) {
    executors::SequenceSpec other =
        Constrained("wf/o" + std::to_string(i), kSchema, 40, 0.7, 20 + i);
    if (i == 1) other.json_schema.clear();
    ASSERT_TRUE(mixed.engine().Admit(other).ok());
  }
  EXPECT_EQ(RunToEnd(mixed, Constrained("wf/n", kSchema, 64, 1.0, 11)), ref);
  JsonHarness other_seed(true, {AsciiMask()});
  EXPECT_NE(RunToEnd(other_seed, Constrained("wf/n", kSchema, 64, 1.0, 12)), ref);
}

// A preempted sequence readmitted with its earlier output continues as if never stopped:
// its constraint is rebuilt from the tokens already in its context.
TEST(CpuEngineJsonTest, ConstraintSurvivesPreemption) {
  JsonHarness ref_h(true, {AsciiMask()});
  const std::vector<int32_t> ref = RunToEnd(ref_h, Constrained("wf/n", kSchema, 48, 1.0, 7));
  ASSERT_GT(ref.size(), 8u);
  JsonHarness h(true, {AsciiMask()});
  executors::SequenceSpec s = Constrained("wf/n", kSchema, 48, 1.0, 7);
  ASSERT_TRUE(h.engine().Admit(s).ok());
  ASSERT_TRUE(h.RunUntil([&] { return h.out("wf/n").size() >= 5; }));
  Result<executors::SeqProgress> p = h.engine().Preempt("wf/n");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  ASSERT_GT(p->output_done, 0);
  executors::SequenceSpec again = s;
  again.contexts = {executors::SeqContext{"wf/n-ctx", h.engine().context_tokens("wf/n-ctx"), true}};
  again.prefill_tokens = 0;
  again.prompt_token_ids.clear();
  again.output_done = p->output_done;
  EXPECT_EQ(RunToEnd(h, again), ref);
}

TEST(CpuEngineJsonTest, NoAllowedTokenEndsTheSequence) {
  std::vector<bool> no_quote = AsciiMask();
  no_quote['"'] = false;  // every required key starts with one
  JsonHarness h(true, {no_quote});
  const std::vector<int32_t> out = RunToEnd(h, Constrained("wf/n", kSchema, 64));
  ASSERT_FALSE(out.empty());
  EXPECT_EQ(out.back(), TinyModel().shape().eos_id);
  EXPECT_EQ(ByteText(out).find_first_not_of(" \t\n{"), std::string::npos) << ByteText(out);
  ExpectObject(kSchema, ByteText(out), {"path", "lines", "mode", "force", "opts"});
}

TEST(CpuEngineJsonTest, RefusedWithoutTokenBytesOrWithABadSchema) {
  JsonHarness h(/*token_bytes=*/false);
  Status st = h.engine().Admit(Constrained("wf/n", kSchema, 8));
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("'wf/n'"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("token_bytes"), std::string::npos) << st.message();
  EXPECT_EQ(h.engine().blocks_used(), 0);
  JsonHarness good;
  st = good.engine().Admit(Constrained("wf/n", R"({"type":"array"})", 8));
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("not \"object\""), std::string::npos) << st.message();
}

}  // namespace
}  // namespace switchyard::cpu_engine
