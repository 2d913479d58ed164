#include "cpu_engine/safetensors.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <unistd.h>
#include <nlohmann/json.hpp>

#include "cpu_engine/model.h"
#include "tests/cpu_engine/checkpoint_writer.h"
#include "tests/cpu_engine/cpu_test_util.h"

namespace switchyard::cpu_engine {
namespace {

namespace fs = std::filesystem;

using testing::CheckpointTensors;
using testing::Tensor;
using testing::WriteSafetensors;

ModelShape SmallShape() {
  ModelShape s;
  s.name = "ckpt";
  s.vocab_size = 270;
  s.hidden = 32;
  s.layers = 2;
  s.heads = 4;
  s.kv_heads = 2;
  s.head_dim = 8;
  s.intermediate = 64;
  s.rope_theta = 50000;
  s.rms_eps = 1e-6;
  s.seed = 11;
  s.max_positions = 512;
  return s;
}

std::string HfConfig(const ModelShape& s, bool tie) {
  nlohmann::json j = {{"architectures", {"LlamaForCausalLM"}},
                      {"model_type", "llama"},
                      {"vocab_size", s.vocab_size},
                      {"hidden_size", s.hidden},
                      {"num_hidden_layers", s.layers},
                      {"num_attention_heads", s.heads},
                      {"num_key_value_heads", s.kv_heads},
                      {"intermediate_size", s.intermediate},
                      {"max_position_embeddings", s.max_positions},
                      {"rope_theta", s.rope_theta},
                      {"rms_norm_eps", s.rms_eps},
                      {"hidden_act", "silu"},
                      {"bos_token_id", 1},
                      {"eos_token_id", 2},
                      {"tie_word_embeddings", tie},
                      {"torch_dtype", "bfloat16"}};
  return j.dump(2);
}

// Every weight rounded to bf16, so the bf16 and f32 checkpoints hold the same values.
Weights RoundedWeights(const ModelShape& s) {
  Weights w = RandomWeights(s);
  testing::RoundWeights(&w);
  return w;
}

class CheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("sy_cpu_ckpt_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(root_);
    shape_ = SmallShape();
    weights_ = RoundedWeights(shape_);
  }
  void TearDown() override { fs::remove_all(root_); }

  // A checkpoint dir with `tensors` split over `shards` files.
  std::string Write(const std::string& name, std::vector<Tensor> tensors, const std::string& dtype,
                    int shards = 1, bool tie = false) {
    const fs::path dir = root_ / name;
    fs::create_directories(dir);
    std::ofstream(dir / "config.json") << HfConfig(shape_, tie);
    const size_t per = (tensors.size() + shards - 1) / shards;
    for (int i = 0; i < shards; ++i) {
      std::vector<Tensor> part(tensors.begin() + std::min(tensors.size(), i * per),
                               tensors.begin() + std::min(tensors.size(), (i + 1) * per));
      WriteSafetensors((dir / ("model-0000" + std::to_string(i + 1) + ".safetensors")).string(),
                       part, dtype);
    }
    return dir.string();
  }

  // Logits of a few positions of a fixed prompt.
  static std::vector<float> Logits(const Model& m) {
    testing::Context c(m.shape(), 20);
    auto rows = testing::Rows(c, testing::Tokens(20, 3, m.shape().vocab_size), 0, 20, true);
    std::vector<float> lg;
    EXPECT_TRUE(m.Forward(rows, &lg).ok());
    return lg;
  }

  fs::path root_;
  ModelShape shape_;
  Weights weights_;
};

TEST_F(CheckpointTest, Bf16AndShardedF32CheckpointsGiveTheApiModelsLogits) {
  auto api = Model::FromWeights(shape_, weights_);
  ASSERT_TRUE(api.ok()) << api.status();
  const auto expected = Logits(**api);
  auto tensors = CheckpointTensors(shape_, weights_);
  for (auto [dtype, shards] : {std::pair{"BF16", 1}, std::pair{"F32", 3}}) {
    auto m = Model::Load(Write(std::string(dtype) + "_dir", tensors, dtype, shards));
    ASSERT_TRUE(m.ok()) << m.status();
    EXPECT_FALSE((*m)->shape().random_weights);
    EXPECT_FALSE((*m)->shape().tie_embeddings);
    EXPECT_EQ((*m)->shape().name, std::string(dtype) + "_dir");
    EXPECT_EQ((*m)->shape().eos_id, 2);
    EXPECT_EQ(Logits(**m), expected) << dtype;
  }
}

TEST_F(CheckpointTest, TiedConfigUsesTheEmbeddingAsTheHead) {
  weights_.lm_head.clear();
  auto api = Model::FromWeights(shape_, weights_);
  ASSERT_TRUE(api.ok());
  auto m = Model::LoadCheckpoint(
      Write("tied", CheckpointTensors(shape_, weights_), "BF16", 1, /*tie=*/true));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_TRUE((*m)->shape().tie_embeddings);
  EXPECT_EQ(Logits(**m), Logits(**api));
}

// An untied config needs lm_head.weight; a tied one must not carry it (it would be unused).
TEST_F(CheckpointTest, HeadTensorMustMatchTieWordEmbeddings) {
  Weights untied = weights_;
  weights_.lm_head.clear();
  auto m = Model::LoadCheckpoint(Write("no_head", CheckpointTensors(shape_, weights_), "BF16"));
  ASSERT_FALSE(m.ok());
  EXPECT_TRUE(m.status().IsNotFound()) << m.status();
  EXPECT_NE(m.status().message().find("lm_head.weight"), std::string::npos) << m.status();
  m = Model::LoadCheckpoint(
      Write("extra_head", CheckpointTensors(shape_, untied), "BF16", 1, /*tie=*/true));
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("lm_head.weight: tensor not used by a llama model"),
            std::string::npos)
      << m.status();
}

TEST_F(CheckpointTest, RejectsATruncatedFileNamingIt) {
  const std::string dir = Write("trunc", CheckpointTensors(shape_, weights_), "BF16");
  const fs::path file = fs::path(dir) / "model-00001.safetensors";
  fs::resize_file(file, fs::file_size(file) - 100);
  auto m = Model::LoadCheckpoint(dir);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find(file.string()), std::string::npos) << m.status();
  EXPECT_NE(m.status().message().find("truncated"), std::string::npos) << m.status();
  fs::resize_file(file, 20);  // inside the header
  m = Model::LoadCheckpoint(dir);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find(file.string()), std::string::npos) << m.status();
}

TEST_F(CheckpointTest, RejectsAMissingTensorNamingIt) {
  auto tensors = CheckpointTensors(shape_, weights_);
  std::erase_if(tensors,
                [](const Tensor& t) { return t.name == "model.layers.1.mlp.up_proj.weight"; });
  auto m = Model::LoadCheckpoint(Write("missing", tensors, "F32"));
  ASSERT_FALSE(m.ok());
  EXPECT_TRUE(m.status().IsNotFound()) << m.status();
  EXPECT_NE(m.status().message().find("model.layers.1.mlp.up_proj.weight"), std::string::npos)
      << m.status();
}

TEST_F(CheckpointTest, RejectsAWrongShapeAndAnUnsupportedDtype) {
  auto tensors = CheckpointTensors(shape_, weights_);
  for (Tensor& t : tensors)  // [kv_dim, hidden] written as [hidden, kv_dim]: same bytes
    if (t.name == "model.layers.0.self_attn.k_proj.weight") t.shape = {t.shape[1], t.shape[0]};
  auto m = Model::LoadCheckpoint(Write("shape", tensors, "F32"));
  ASSERT_FALSE(m.ok());
  EXPECT_TRUE(m.status().IsInvalidArgument()) << m.status();
  EXPECT_NE(m.status().message().find("model.layers.0.self_attn.k_proj.weight"), std::string::npos)
      << m.status();
  EXPECT_NE(m.status().message().find("shape [32,16], expected [16,32]"), std::string::npos)
      << m.status();
  // A header whose byte count disagrees with its shape.
  tensors = CheckpointTensors(shape_, weights_);
  tensors[3].shape = {64};
  m = Model::LoadCheckpoint(Write("count", tensors, "F32"));
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find(tensors[3].name), std::string::npos) << m.status();
  m = Model::LoadCheckpoint(Write("int8", CheckpointTensors(shape_, weights_), "I8"));
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("I8"), std::string::npos) << m.status();
  // The first tensor read: layer by layer, the embedding after the layers.
  EXPECT_NE(m.status().message().find("model.layers.0.input_layernorm.weight"), std::string::npos)
      << m.status();
}

TEST_F(CheckpointTest, RejectsOffsetsOutOfRangeAndDuplicatesAcrossShards) {
  const fs::path dir = root_ / "offsets";
  fs::create_directories(dir);
  const std::string p = (dir / "a.safetensors").string();
  std::string h = R"({"x": {"dtype": "F32", "shape": [4], "data_offsets": [0, 400]}})";
  std::ofstream out(p, std::ios::binary);
  const uint64_t len = h.size();
  out.write(reinterpret_cast<const char*>(&len), 8);
  out << h << std::string(16, '\0');
  out.close();
  auto st = SafetensorsSet::Open({p});
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.status().message().find(p), std::string::npos) << st.status();
  EXPECT_NE(st.status().message().find("'x'"), std::string::npos) << st.status();
  std::vector<float> v = {1, 2, 3, 4};
  WriteSafetensors(p, {{"x", {4}, &v}}, "F32");
  const std::string q = (dir / "b.safetensors").string();
  WriteSafetensors(q, {{"x", {4}, &v}}, "BF16");
  EXPECT_TRUE(SafetensorsSet::Open({p}).ok());
  auto both = SafetensorsSet::Open({p, q});
  ASSERT_FALSE(both.ok());
  EXPECT_NE(both.status().message().find("'x'"), std::string::npos);
  auto one = SafetensorsSet::Open({q});
  ASSERT_TRUE(one.ok());
  auto x = (*one)->Read("x", {4});
  ASSERT_TRUE(x.ok());
  EXPECT_EQ(*x, v);
  EXPECT_TRUE((*one)->Read("x", {2, 2}).status().IsInvalidArgument());
}

TEST(HalfFloats, ConvertExactly) {
  EXPECT_EQ(Bf16ToFloat(0x3f80), 1.0f);
  EXPECT_EQ(Bf16ToFloat(0xc000), -2.0f);
  EXPECT_EQ(F16ToFloat(0x3c00), 1.0f);
  EXPECT_EQ(F16ToFloat(0xc000), -2.0f);
  EXPECT_EQ(F16ToFloat(0x7bff), 65504.0f);
  EXPECT_EQ(F16ToFloat(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(F16ToFloat(0x03ff), std::ldexp(1023.0f, -24));
  EXPECT_TRUE(std::isinf(F16ToFloat(0x7c00)));
  EXPECT_TRUE(std::isnan(F16ToFloat(0x7e00)));
}

}  // namespace
}  // namespace switchyard::cpu_engine
