// Guided choice (SequenceSpec::choices, cpu_engine/choice_constraint.h) and logit_bias
// (SequenceSpec::logit_bias) in the CPU engine, on a random-weights tiny model with a byte
// vocabulary: the output is exactly one of the choices whatever the weights, a +100 bias on
// the stop id ends the answer at once, a -100 bias bans a token; a choice without token
// bytes, or with a JSON schema too, is refused.
#include <gtest/gtest.h>

#include "cpu_engine/choice_constraint.h"
#include "tests/cpu_engine/cpu_test_util.h"
#include "tests/cpu_engine/engine_runner.h"

namespace switchyard::cpu_engine {
namespace {

using testing::ByteText;
using testing::TinyModel;

// A runner over the tiny model, with its byte vocabulary's token bytes unless told not.
class ChoiceRunner : public testing::EngineRunner {
 public:
  explicit ChoiceRunner(bool token_bytes = true)
      : EngineRunner(&TinyModel(), Options(token_bytes)) {}
  static executors::SequenceSpec Spec(const std::string& key, uint64_t seed) {
    executors::SequenceSpec s;
    s.key = key;
    s.contexts.push_back(executors::SeqContext{key + "-ctx", 0, false});
    s.prefill_tokens = 4;
    for (char c : std::string("Go: ")) s.prompt_token_ids.push_back(c);
    s.max_output_tokens = 64;
    s.temperature = 1.0;
    s.sampling_seed = seed;
    return s;
  }

 private:
  static CpuEngine::Options Options(bool token_bytes) {
    CpuEngine::Options o;
    if (token_bytes) {
      o.token_bytes.resize(static_cast<size_t>(TinyModel().shape().vocab_size));
      for (int b = 0; b < 256; ++b) o.token_bytes[static_cast<size_t>(b)] = std::string(1, char(b));
    }
    return o;
  }
};

TEST(ChoiceConstraint, AllowsPrefixesOfAChoiceAndCompletesOnOne) {
  ChoiceConstraint c({"yes", "yesterday", "no"});
  EXPECT_TRUE(c.CanFeed("ye"));
  EXPECT_FALSE(c.CanFeed("x"));
  EXPECT_FALSE(c.CanFeed(""));
  EXPECT_TRUE(c.Feed("yes"));
  EXPECT_TRUE(c.complete());
  EXPECT_TRUE(c.CanFeed("terday"));
  EXPECT_FALSE(c.Feed("s"));
  EXPECT_EQ(c.output(), "yes");
}

TEST(GuidedChoice, TheOutputIsOneOfTheChoicesWhateverTheWeights) {
  ChoiceRunner r;
  const std::vector<std::string> choices = {"<tool_call>\n{\"name\": \"ls\"}\n</tool_call>",
                                            "plain answer"};
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    executors::SequenceSpec s = ChoiceRunner::Spec("c" + std::to_string(seed), seed);
    s.choices = choices;
    const std::string text = ByteText(r.Run(s));
    EXPECT_TRUE(text == choices[0] || text == choices[1]) << text;
  }
}

TEST(GuidedChoice, RefusedWithoutTokenBytesOrWithAJsonSchema) {
  ChoiceRunner no_bytes(false);
  executors::SequenceSpec s = ChoiceRunner::Spec("a", 1);
  s.choices = {"x"};
  EXPECT_TRUE(no_bytes.Admit(s).IsInvalidArgument());
  ChoiceRunner r;
  s.json_schema = R"({"type": "object"})";
  EXPECT_TRUE(r.Admit(s).IsInvalidArgument());
}

TEST(LogitBias, APlusHundredOnTheStopIdEndsTheAnswerAndMinusHundredBansAToken) {
  ChoiceRunner r;
  const int32_t eos = TinyModel().shape().eos_id;
  executors::SequenceSpec stop = ChoiceRunner::Spec("stop", 3);
  stop.logit_bias = {{eos, 100.0f}};
  EXPECT_EQ(r.Run(stop), std::vector<int32_t>{eos});
  executors::SequenceSpec ban = ChoiceRunner::Spec("ban", 3);
  for (int t = 0; t < TinyModel().shape().vocab_size; ++t)
    if (t != 'a') ban.logit_bias.emplace_back(t, -100.0f);
  ban.stop_at_eos = false;
  ban.max_output_tokens = 8;
  EXPECT_EQ(ByteText(r.Run(ban)), "aaaaaaaa");
}

}  // namespace
}  // namespace switchyard::cpu_engine
