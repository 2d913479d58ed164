// A random-weights model's answer length (ModelShape::mean_answer_tokens, a shape file's
// "meanAnswerTokens"): sampled answers end with the stop id after about N tokens on
// average instead of always running to max_output_tokens; a greedy answer does not depend
// on the seed; a node given as token counts still decodes to its cap; a shape of checkpoint
// weights may not set it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include "cpu_engine/model.h"
#include "tests/cpu_engine/engine_runner.h"

namespace switchyard::cpu_engine {
namespace {

// tiny-llama-2l with answers of 8 tokens on average.
const Model& ShortAnswerModel() {
  static std::unique_ptr<Model> m = [] {
    const auto dir = std::filesystem::temp_directory_path() / "sy_answer_length_test";
    std::filesystem::create_directories(dir);
    const std::string path = (dir / "tiny-short-answers.json").string();
    std::ofstream(path) << R"({"name": "tiny-short-answers", "randomWeights": true, "seed": "2",
      "meanAnswerTokens": 8, "vocabSize": 300, "hiddenSize": 64, "numLayers": 2,
      "numAttentionHeads": 4, "numKvHeads": 2, "headDim": 16, "intermediateSize": 176,
      "maxPositions": 2048, "bosId": 256, "eosId": 257})";
    auto r = Model::Load(path);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? std::move(*r) : nullptr;
  }();
  return *m;
}

// Runs sequences on the short-answer model to their end.
class LengthRunner : public testing::EngineRunner {
 public:
  LengthRunner() : EngineRunner(&ShortAnswerModel()) {}
  std::vector<int32_t> Run(const std::string& key, double temperature, uint64_t seed,
                           bool text = true) {
    executors::SequenceSpec s;
    s.key = key;
    s.contexts.push_back(executors::SeqContext{key + "-ctx", 0, false});
    s.prefill_tokens = 6;
    if (text)
      for (char c : std::string("Hello:")) s.prompt_token_ids.push_back(c);
    s.max_output_tokens = 200;
    s.temperature = temperature;
    s.sampling_seed = seed;
    return EngineRunner::Run(s);
  }
};

TEST(AnswerLength, SampledAnswersEndAfterAboutTheMeanNotAtTheCap) {
  LengthRunner r;
  const int32_t eos = ShortAnswerModel().shape().eos_id;
  int64_t total = 0, ended = 0;
  const int kRuns = 60;
  for (int i = 0; i < kRuns; ++i) {
    std::vector<int32_t> out = r.Run("s" + std::to_string(i), 1.0, 1000 + i);
    ASSERT_GE(out.size(), 2u) << "a token, then the stop id at the earliest";
    total += static_cast<int64_t>(out.size());
    if (out.back() == eos) ++ended;
  }
  EXPECT_GE(ended, kRuns - 1) << "answers end with the stop id, not at max_output_tokens (200)";
  const double mean = static_cast<double>(total) / kRuns;
  EXPECT_GT(mean, 4.0);  // 1 + geometric with mean 8 (the stop id counted): 60 draws
  EXPECT_LT(mean, 15.0);
}

TEST(AnswerLength, AGreedyAnswerDoesNotDependOnTheSeed) {
  LengthRunner r;
  EXPECT_EQ(r.Run("g1", 0.0, 1), r.Run("g2", 0.0, 999));
}

TEST(AnswerLength, ATokenCountNodeStillDecodesToItsCap) {
  LengthRunner r;  // no prompt ids: a workflow-API node replaying a trace's recorded lengths
  EXPECT_EQ(r.Run("counts", 1.0, 7, /*text=*/false).size(), 200u);
}

TEST(AnswerLength, OnlyRandomWeightsMayHaveIt) {
  auto bad = ParseShapeFile(
      R"({"name": "x", "randomWeights": false, "meanAnswerTokens": 8, "vocabSize": 300,
      "hiddenSize": 64, "numLayers": 2, "numAttentionHeads": 4, "numKvHeads": 2,
      "intermediateSize": 176})",
      "x.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("meanAnswerTokens"), std::string::npos)
      << bad.status().ToString();
  auto negative = ParseShapeFile(
      R"({"name": "x", "randomWeights": true, "meanAnswerTokens": -1, "vocabSize": 300,
      "hiddenSize": 64, "numLayers": 2, "numAttentionHeads": 4, "numKvHeads": 2,
      "intermediateSize": 176})",
      "x.json");
  EXPECT_FALSE(negative.ok());
}

}  // namespace
}  // namespace switchyard::cpu_engine
