#include "cpu_engine/model_shape.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "tests/cpu_engine/cpu_test_util.h"

namespace switchyard::cpu_engine {
namespace {

class ShapeFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("sy_cpu_shape_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& text) {
    const std::string p = (dir_ / name).string();
    std::ofstream(p) << text;
    return p;
  }
  // A valid shape file's body with `edit` applied (a key replaced or removed).
  static std::string Body(const std::string& drop, const std::string& extra = "") {
    const std::pair<const char*, const char*> keys[] = {
        {"vocabSize", "300"},       {"hiddenSize", "64"},     {"numLayers", "2"},
        {"numAttentionHeads", "4"}, {"numKvHeads", "2"},      {"intermediateSize", "176"},
        {"seed", "\"9\""},          {"randomWeights", "true"}};
    std::string s = "{\"name\": \"t\"";
    for (auto [k, v] : keys)
      if (drop != k) s += std::string(", \"") + k + "\": " + v;
    return s + extra + "}";
  }
  std::filesystem::path dir_;
};

TEST_F(ShapeFileTest, ReadsEveryFieldAndDefaults) {
  auto s = LoadShapeFile(Write("a.json", Body("", ", \"ropeTheta\": 500000, \"eosId\": 3")));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->vocab_size, 300);
  EXPECT_EQ(s->head_dim, 16);  // hiddenSize / numAttentionHeads
  EXPECT_EQ(s->seed, 9u);
  EXPECT_EQ(s->rope_theta, 500000.0);
  EXPECT_EQ(s->eos_id, 3);
  EXPECT_EQ(s->bos_id, -1);
  EXPECT_TRUE(s->random_weights);
  // 2 layers x (64 x (64 + 2 x 32) + 64 x 64 + 3 x 64 x 176 + 2 x 64) + 2 x 300 x 64 + 64.
  EXPECT_EQ(s->parameters(), 2u * (64 * 128 + 64 * 64 + 3 * 64 * 176 + 128) + 2 * 300 * 64 + 64);
}

TEST_F(ShapeFileTest, CommittedTinyShapesLoad) {
  for (const char* name : {"tiny-llama-2l", "tiny-llama-4l"}) {
    auto s = LoadShapeFile(testing::ShapePath(name));
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_EQ(s->name, name);
    EXPECT_TRUE(s->random_weights);
    EXPECT_EQ(s->bos_id, 256);
    EXPECT_EQ(s->eos_id, 257);
  }
}

void ExpectError(const Result<ModelShape>& r, const std::string& file, const std::string& field) {
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsInvalidArgument()) << r.status();
  EXPECT_NE(r.status().message().find(file), std::string::npos) << r.status();
  EXPECT_NE(r.status().message().find("'" + field + "'"), std::string::npos) << r.status();
}

TEST_F(ShapeFileTest, ErrorsNameTheFileAndTheField) {
  std::string p = Write("missing.json", Body("numLayers"));
  ExpectError(LoadShapeFile(p), p, "numLayers");
  p = Write("negative.json", Body("intermediateSize", ", \"intermediateSize\": -5"));
  ExpectError(LoadShapeFile(p), p, "intermediateSize");
  p = Write("heads.json", Body("numAttentionHeads", ", \"numAttentionHeads\": 5"));
  ExpectError(LoadShapeFile(p), p, "numAttentionHeads");  // 5 does not divide 64
  p = Write("kv.json", Body("numKvHeads", ", \"numKvHeads\": 3"));
  ExpectError(LoadShapeFile(p), p, "numKvHeads");  // 3 does not divide 4
  p = Write("type.json", Body("hiddenSize", ", \"hiddenSize\": \"wide\""));
  ExpectError(LoadShapeFile(p), p, "hiddenSize");
  p = Write("eos.json", Body("", ", \"eosId\": 300"));
  ExpectError(LoadShapeFile(p), p, "eosId");
  p = Write("bad.json", "{not json");
  EXPECT_TRUE(LoadShapeFile(p).status().IsInvalidArgument());
  EXPECT_TRUE(LoadShapeFile((dir_ / "absent.json").string()).status().IsNotFound());
}

TEST_F(ShapeFileTest, HfConfig) {
  const std::string cfg = R"({"model_type": "llama", "vocab_size": 1000, "hidden_size": 128,
    "num_hidden_layers": 3, "num_attention_heads": 8, "num_key_value_heads": 2,
    "intermediate_size": 352, "max_position_embeddings": 2048, "rope_theta": 500000.0,
    "rms_norm_eps": 1e-05, "bos_token_id": 1, "eos_token_id": [2, 5],
    "tie_word_embeddings": true, "hidden_act": "silu", "rope_scaling": null})";
  auto s = LoadHfConfig(Write("config.json", cfg));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_FALSE(s->random_weights);
  EXPECT_EQ(s->kv_heads, 2);
  EXPECT_EQ(s->head_dim, 16);
  EXPECT_EQ(s->eos_id, 2);
  EXPECT_EQ(s->eos_ids, (std::vector<int32_t>{2, 5}));
  EXPECT_TRUE(s->IsEos(5));
  EXPECT_EQ(s->arch, Arch::kLlama);
  EXPECT_TRUE(s->tie_embeddings);
  EXPECT_EQ(s->max_positions, 2048);
  std::string p = Write("c2.json", R"({"model_type": "llama", "vocab_size": 10})");
  auto r = LoadHfConfig(p);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("'hidden_size'"), std::string::npos) << r.status();
  p = Write("c3.json", R"({"model_type": "gpt2"})");
  EXPECT_TRUE(LoadHfConfig(p).status().IsNotSupported());
}

TEST_F(ShapeFileTest, ReadsArchDtypesAndEosLists) {
  auto s = LoadShapeFile(Write("q.json", Body("",
                                              ", \"arch\": \"qwen3\", \"weightDtype\": \"fp32\", "
                                              "\"kvDtype\": \"BF16\", \"eosId\": [3, 7]")));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->arch, Arch::kQwen3);
  EXPECT_TRUE(s->qk_norm());
  EXPECT_FALSE(s->qkv_bias());
  EXPECT_EQ(s->weight_dtype, DType::kF32);
  EXPECT_EQ(s->kv_dtype, DType::kBf16);
  EXPECT_EQ(s->kv_bytes_per_token(), 2u * 2 * 2 * 16 * 2);  // bf16 KV
  EXPECT_EQ(s->eos_id, 3);
  EXPECT_EQ(s->eos_ids, (std::vector<int32_t>{3, 7}));
  // Defaults: llama, bf16 weights, fp32 KV (the committed tiny shapes say "FP32").
  auto d = LoadShapeFile(Write("d.json", Body("")));
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->arch, Arch::kLlama);
  EXPECT_EQ(d->weight_dtype, DType::kBf16);
  EXPECT_EQ(d->kv_dtype, DType::kF32);
  std::string p = Write("arch.json", Body("", ", \"arch\": \"gpt2\""));
  ExpectError(LoadShapeFile(p), p, "arch");
  p = Write("wd.json", Body("", ", \"weightDtype\": \"int8\""));
  ExpectError(LoadShapeFile(p), p, "weightDtype");
  p = Write("eos.json", Body("", ", \"eosId\": [3, 300]"));
  ExpectError(LoadShapeFile(p), p, "eosId");
}

// config.json fields whose math the engine does not implement: NotSupported naming them.
TEST_F(ShapeFileTest, HfConfigRefusesUnsupportedFieldsByName) {
  const std::string base = R"("vocab_size": 100, "hidden_size": 32, "num_hidden_layers": 1,
    "num_attention_heads": 2, "intermediate_size": 64, "hidden_act": "silu")";
  const std::pair<std::string, std::string> cases[] = {
      {R"("model_type": "llama", "rope_scaling": {"rope_type": "yarn", "factor": 4.0})",
       "rope_scaling"},
      {R"("model_type": "llama", "rope_scaling": {"type": "dynamic", "factor": 2.0})",
       "rope_scaling"},
      {R"("model_type": "qwen2", "rope_scaling": {"type": "linear", "factor": 2.0})",
       "rope_scaling"},
      {R"("model_type": "llama", "attention_bias": true)", "attention_bias"},
      {R"("model_type": "qwen3", "head_dim": 16, "attention_bias": true)", "attention_bias"},
      {R"("model_type": "llama", "mlp_bias": true)", "mlp_bias"},
      {R"("model_type": "qwen2", "use_sliding_window": true, "sliding_window": 64)",
       "use_sliding_window"},
      {R"("model_type": "qwen3", "head_dim": 16, "layer_types": ["sliding_attention"])",
       "layer_types"},
      {R"("model_type": "llama", "partial_rotary_factor": 0.5)", "partial_rotary_factor"},
      {R"("model_type": "llama", "quantization_config": {"quant_method": "awq"})",
       "quantization_config"},
      {R"("model_type": "mistral")", "model_type"},
      {R"("model_type": "llama", "architectures": ["LlamaForSequenceClassification"])",
       "architectures"}};
  int i = 0;
  for (const auto& [fields, field] : cases) {
    const std::string p =
        Write("c" + std::to_string(i++) + ".json", "{" + fields + ", " + base + "}");
    auto r = LoadHfConfig(p);
    ASSERT_FALSE(r.ok()) << fields;
    EXPECT_TRUE(r.status().IsNotSupported()) << r.status();
    EXPECT_NE(r.status().message().find("'" + field + "'"), std::string::npos) << r.status();
    EXPECT_NE(r.status().message().find(p), std::string::npos) << r.status();
  }
  // hidden_act other than silu, and qwen3 without head_dim.
  auto r = LoadHfConfig(Write("act.json", R"({"model_type": "llama", "vocab_size": 100,
    "hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2,
    "intermediate_size": 64, "hidden_act": "gelu"})"));
  EXPECT_NE(r.status().message().find("'hidden_act'"), std::string::npos) << r.status();
  r = LoadHfConfig(Write("q3.json", "{\"model_type\": \"qwen3\", " + base + "}"));
  EXPECT_NE(r.status().message().find("'head_dim'"), std::string::npos) << r.status();
  // Accepted as they do not change the math: qwen2's attention_bias, a disabled window,
  // rope_type default, pretraining_tp, rotary over every dim; model_type from architectures.
  r = LoadHfConfig(Write("ok.json", R"({"architectures": ["Qwen2ForCausalLM"],
    "attention_bias": true, "use_sliding_window": false, "sliding_window": 4096,
    "rope_scaling": {"rope_type": "default"}, "pretraining_tp": 1,
    "partial_rotary_factor": 1.0, )" + base +
                                        "}"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->arch, Arch::kQwen2);
  EXPECT_TRUE(r->qkv_bias());
}

TEST_F(ShapeFileTest, HfConfigAddsGenerationConfigEosIds) {
  std::filesystem::create_directories(dir_ / "ckpt");
  const std::string cfg = Write("ckpt/config.json", R"({"model_type": "llama", "vocab_size": 200,
    "hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2,
    "intermediate_size": 64, "eos_token_id": 128, "torch_dtype": "bfloat16"})");
  Write("ckpt/generation_config.json", R"({"eos_token_id": [128, 129, 130]})");
  auto s = LoadHfConfig(cfg);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->eos_id, 128);
  EXPECT_EQ(s->eos_ids, (std::vector<int32_t>{128, 129, 130}));
  EXPECT_EQ(s->weight_dtype, DType::kBf16);
  Write("ckpt/generation_config.json", R"({"eos_token_id": 250})");
  auto r = LoadHfConfig(cfg);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("'eos_token_id'"), std::string::npos) << r.status();
}

}  // namespace
}  // namespace switchyard::cpu_engine
