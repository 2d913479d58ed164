// Checkpoints of each supported family, written here in the family's exact tensor names
// and config.json (Qwen2 with q/k/v biases and tied embeddings; Qwen3 with q_norm/k_norm
// and a head_dim other than hidden/heads; Llama 3 with llama3 rope scaling; SmolLM2, a
// tied Llama) with random weights, as BF16 and as F32 safetensors: they load, and their
// logits and KV match the double-precision reference (reference_model.h) within 1e-5
// relative to max(1, max |reference logit|) — an absolute bound while the logits stay
// within ±1, a relative one beyond.
// Checkpoints with a tensor too many or too few are refused naming it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include <nlohmann/json.hpp>

#include "cpu_engine/model.h"
#include "tests/cpu_engine/checkpoint_writer.h"
#include "tests/cpu_engine/cpu_test_util.h"
#include "tests/cpu_engine/reference_model.h"

namespace switchyard::cpu_engine {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using testing::CheckpointTensors;
using testing::Tensor;

struct Family {
  const char* name;
  ModelShape shape;
  Json config;
  Json generation;  // generation_config.json (null: none)
};

ModelShape Small(Arch arch) {
  ModelShape s;
  s.arch = arch;
  s.vocab_size = 300;
  s.hidden = 64;
  s.layers = 2;
  s.heads = 4;
  s.kv_heads = 2;
  s.head_dim = 16;
  s.intermediate = 96;
  s.max_positions = 256;
  s.rms_eps = 1e-6;
  s.seed = 5;
  return s;
}

Json BaseConfig(const ModelShape& s, const char* type, const char* cls) {
  return Json{{"architectures", {cls}},
              {"model_type", type},
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
              {"tie_word_embeddings", s.tie_embeddings},
              {"attention_dropout", 0.0},
              {"initializer_range", 0.02},
              {"use_cache", true},
              {"torch_dtype", "bfloat16"},
              {"transformers_version", "4.51.0"}};
}

Family Qwen2() {  // Qwen2.5-0.5B's layout: biases, tied embeddings, sliding window off
  ModelShape s = Small(Arch::kQwen2);
  s.rope_theta = 1000000.0;
  s.tie_embeddings = true;
  Json c = BaseConfig(s, "qwen2", "Qwen2ForCausalLM");
  c["use_sliding_window"] = false;
  c["sliding_window"] = 32768;
  c["max_window_layers"] = 21;
  c["rope_scaling"] = nullptr;
  return {"qwen2", s, c, Json{{"bos_token_id", 1}, {"eos_token_id", {2, 7}}}};
}

Family Qwen3() {  // head_dim 32 while hidden / heads is 16
  ModelShape s = Small(Arch::kQwen3);
  s.head_dim = 32;
  s.rope_theta = 1000000.0;
  Json c = BaseConfig(s, "qwen3", "Qwen3ForCausalLM");
  c["head_dim"] = 32;
  c["attention_bias"] = false;
  c["use_sliding_window"] = false;
  c["sliding_window"] = nullptr;
  c["layer_types"] = {"full_attention", "full_attention"};
  return {"qwen3", s, c, Json{{"eos_token_id", 9}}};
}

Family Llama3() {  // llama3 rope scaling over a short original context, so that the high,
                   // medium and low frequency bands all occur with head_dim 16
  ModelShape s = Small(Arch::kLlama);
  s.kv_heads = 1;
  s.rope_theta = 500000.0;
  s.rope_scaling_factor = 8;
  s.rope_low_freq_factor = 1;
  s.rope_high_freq_factor = 4;
  s.rope_original_max_positions = 64;
  Json c = BaseConfig(s, "llama", "LlamaForCausalLM");
  c["head_dim"] = 16;
  c["attention_bias"] = false;
  c["mlp_bias"] = false;
  c["pretraining_tp"] = 1;
  c["eos_token_id"] = {2, 4};
  c["rope_scaling"] = {{"rope_type", "llama3"},
                       {"factor", 8.0},
                       {"low_freq_factor", 1.0},
                       {"high_freq_factor", 4.0},
                       {"original_max_position_embeddings", 64}};
  return {"llama3", s, c, nullptr};
}

Family SmolLm2() {  // a Llama with tied embeddings: no lm_head tensor
  ModelShape s = Small(Arch::kLlama);
  s.heads = 8;
  s.kv_heads = 8;
  s.head_dim = 8;
  s.rope_theta = 100000.0;
  s.tie_embeddings = true;
  Json c = BaseConfig(s, "llama", "LlamaForCausalLM");
  c["rope_scaling"] = nullptr;
  return {"smollm2", s, c, Json{{"eos_token_id", 2}}};
}

// Random weights of the family, norms around 1 and biases of 0.1, every value a bf16 one.
Weights FamilyWeights(const ModelShape& s) {
  Weights w = RandomWeights(s);
  std::mt19937 g(static_cast<uint32_t>(s.seed));
  std::normal_distribution<float> d;
  auto fill = [&](std::vector<float>& v, float base, float scale) {
    for (float& f : v) f = base + scale * d(g);
  };
  fill(w.final_norm, 1, 0.2f);
  for (LayerWeights& l : w.layers) {
    fill(l.attn_norm, 1, 0.2f);
    fill(l.mlp_norm, 1, 0.2f);
    fill(l.q_norm, 1, 0.2f);
    fill(l.k_norm, 1, 0.2f);
    fill(l.q_bias, 0, 0.1f);
    fill(l.k_bias, 0, 0.1f);
    fill(l.v_bias, 0, 0.1f);
  }
  testing::RoundWeights(&w);
  return w;
}

class FamilyDir {
 public:
  FamilyDir() {
    std::string test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::replace(test.begin(), test.end(), '/', '_');  // parameterised names
    root_ =
        fs::temp_directory_path() / ("sy_cpu_families_" + std::to_string(::getpid()) + "_" + test);
    fs::create_directories(root_);
  }
  ~FamilyDir() { fs::remove_all(root_); }
  std::string Write(const std::string& name, const Family& f, const std::vector<Tensor>& tensors,
                    const std::string& dtype) {
    const fs::path dir = root_ / name;
    fs::create_directories(dir);
    std::ofstream(dir / "config.json") << f.config.dump(2);
    if (!f.generation.is_null()) std::ofstream(dir / "generation_config.json") << f.generation;
    testing::WriteSafetensors((dir / "model.safetensors").string(), tensors, dtype);
    return dir.string();
  }

 private:
  fs::path root_;
};

std::vector<Family> Families() { return {Qwen2(), Qwen3(), Llama3(), SmolLm2()}; }

class FamilyCheckpoint : public ::testing::TestWithParam<std::tuple<int, const char*>> {};

TEST_P(FamilyCheckpoint, LoadsAndMatchesTheReference) {
  const Family f = Families()[std::get<0>(GetParam())];
  const std::string dtype = std::get<1>(GetParam());
  const Weights w = FamilyWeights(f.shape);
  FamilyDir dir;
  auto m = Model::Load(dir.Write(f.name, f, CheckpointTensors(f.shape, w), dtype));
  ASSERT_TRUE(m.ok()) << m.status();
  const ModelShape& s = (*m)->shape();
  EXPECT_EQ(s.arch, f.shape.arch);
  EXPECT_EQ(s.head_dim, f.shape.head_dim);
  EXPECT_EQ(s.tie_embeddings, f.shape.tie_embeddings);
  EXPECT_EQ(s.weight_dtype, dtype == "BF16" ? DType::kBf16 : DType::kF32);
  EXPECT_EQ(s.rope_scaling_factor, f.shape.rope_scaling_factor);
  EXPECT_FALSE(s.random_weights);
  const int64_t n = 40;
  const auto toks = testing::Tokens(n, 8, s.vocab_size);
  const testing::Reference ref = testing::RunReference(f.shape, w, toks);
  testing::Context ctx(s, n);
  std::vector<float> logits, all;  // a 30-row prefill (logits for all), then decode rows
  ASSERT_TRUE((*m)->Forward(testing::Rows(ctx, toks, 0, 30, true), &logits).ok());
  all = logits;
  for (int64_t p = 30; p < n; ++p) {
    ASSERT_TRUE((*m)->Forward(testing::Rows(ctx, toks, p, p + 1), &logits).ok());
    all.insert(all.end(), logits.begin(), logits.end());
  }
  double worst = 0, spread = 0;
  for (int64_t p = 0; p < n; ++p) {
    worst = std::max(worst, testing::RelErr(&all[p * s.vocab_size], ref.logits[p]));
    for (int kv = 0; kv < 2; ++kv)
      EXPECT_LT(testing::RelErr(ctx.At(s, 1, kv, p), (kv ? ref.v : ref.k)[1][p]), 1e-5)
          << (kv ? "V" : "K") << " of layer 1 at position " << p;
  }
  for (double v : ref.logits.back()) spread = std::max(spread, std::abs(v));
  EXPECT_LT(worst, 1e-5) << f.name << " " << dtype;
  EXPECT_GT(spread, 1e-2) << "logits too small to tell a wrong model";
}

INSTANTIATE_TEST_SUITE_P(Families, FamilyCheckpoint,
                         ::testing::Combine(::testing::Values(0, 1, 2, 3),
                                            ::testing::Values("BF16", "F32")));

// The stop ids: config.json's (an id or a list), then generation_config.json's.
TEST(FamilyCheckpoint, EosIdsComeFromConfigAndGenerationConfig) {
  FamilyDir dir;
  const std::pair<Family, std::vector<int32_t>> cases[] = {
      {Qwen2(), {2, 7}}, {Qwen3(), {2, 9}}, {Llama3(), {2, 4}}, {SmolLm2(), {2}}};
  for (const auto& [f, want] : cases) {
    const Weights w = FamilyWeights(f.shape);
    auto m = Model::Load(dir.Write(f.name, f, CheckpointTensors(f.shape, w), "BF16"));
    ASSERT_TRUE(m.ok()) << m.status();
    EXPECT_EQ((*m)->shape().eos_ids, want) << f.name;
    EXPECT_EQ((*m)->shape().eos_id, 2) << f.name;
    for (int32_t id : want) EXPECT_TRUE((*m)->shape().IsEos(id));
    EXPECT_FALSE((*m)->shape().IsEos(3));
  }
}

// A BF16 checkpoint stored as bf16 and its F32 twin stored as fp32: the same logits, bit
// for bit (widening in registers computes the fp32 path's fma chains).
TEST(FamilyCheckpoint, Bf16AndF32CheckpointsGiveTheSameBits) {
  FamilyDir dir;
  for (const Family& f : Families()) {
    const Weights w = FamilyWeights(f.shape);
    const auto tensors = CheckpointTensors(f.shape, w);
    auto b = Model::Load(dir.Write(std::string(f.name) + "_b", f, tensors, "BF16"));
    auto d = Model::Load(dir.Write(std::string(f.name) + "_f", f, tensors, "F32"));
    ASSERT_TRUE(b.ok() && d.ok());
    EXPECT_LT((*b)->weight_bytes(), (*d)->weight_bytes() * 6 / 10) << f.name;
    std::vector<float> lb, ld;
    testing::Context cb((*b)->shape(), 24), cd((*d)->shape(), 24);
    const auto toks = testing::Tokens(24, 2, f.shape.vocab_size);
    ASSERT_TRUE((*b)->Forward(testing::Rows(cb, toks, 0, 24, true), &lb).ok());
    ASSERT_TRUE((*d)->Forward(testing::Rows(cd, toks, 0, 24, true), &ld).ok());
    ASSERT_EQ(lb.size(), ld.size());
    EXPECT_EQ(0, std::memcmp(lb.data(), ld.data(), lb.size() * sizeof(float))) << f.name;
    // LoadOptions: the BF16 checkpoint stored as fp32, with bf16 KV.
    LoadOptions o;
    o.weight_dtype = DType::kF32;
    o.kv_dtype = DType::kBf16;
    auto e = Model::Load(dir.Write(std::string(f.name) + "_o", f, tensors, "BF16"), o);
    ASSERT_TRUE(e.ok()) << e.status();
    EXPECT_EQ((*e)->shape().weight_dtype, DType::kF32);
    EXPECT_EQ((*e)->shape().kv_dtype, DType::kBf16);
    EXPECT_EQ((*e)->weight_bytes(), (*d)->weight_bytes());
  }
}

void ExpectRefused(const Result<std::unique_ptr<Model>>& m, const std::string& text) {
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find(text), std::string::npos) << m.status();
}

TEST(FamilyCheckpoint, RefusesATensorTheFamilyDoesNotUseNamingIt) {
  FamilyDir dir;
  const Family llama = Llama3();
  const Weights w = FamilyWeights(llama.shape);
  auto tensors = CheckpointTensors(llama.shape, w);
  const std::vector<float> bias(static_cast<size_t>(llama.shape.q_dim()), 0.5f);
  tensors.push_back({"model.layers.1.self_attn.q_proj.bias", {llama.shape.q_dim()}, &bias});
  auto m = Model::Load(dir.Write("extra", llama, tensors, "BF16"));
  EXPECT_TRUE(m.status().IsInvalidArgument()) << m.status();
  ExpectRefused(m, "model.layers.1.self_attn.q_proj.bias: tensor not used by a llama model");
  ExpectRefused(m, "model.safetensors");
  // Qwen2 tensors under a qwen3 config: the biases are named too.
  const Family q2 = Qwen2();
  Family as_q3 = Qwen3();
  as_q3.shape = q2.shape;
  const Weights w2 = FamilyWeights(q2.shape);
  as_q3.config = Qwen3().config;
  as_q3.config["head_dim"] = 16;
  as_q3.config["tie_word_embeddings"] = true;
  m = Model::Load(dir.Write("q2_as_q3", as_q3, CheckpointTensors(q2.shape, w2), "BF16"));
  ExpectRefused(m, "tensor not used by a qwen3 model");
  // Rotary buffers some exports carry are ignored, and an F32 one does not make the
  // BF16 weights fp32-stored.
  const std::vector<float> inv(8, 1.0f);
  tensors.pop_back();
  const std::string with_inv = dir.Write("inv_freq", llama, tensors, "BF16");
  testing::WriteSafetensors(with_inv + "/rotary.safetensors",
                            {{"model.layers.0.self_attn.rotary_emb.inv_freq", {8}, &inv}}, "F32");
  m = Model::Load(with_inv);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ((*m)->shape().weight_dtype, DType::kBf16);
}

TEST(FamilyCheckpoint, RefusesAMissingTensorNamingIt) {
  FamilyDir dir;
  for (const auto& [f, drop] : {std::pair{Qwen3(), "model.layers.1.self_attn.k_norm.weight"},
                                std::pair{Qwen2(), "model.layers.0.self_attn.v_proj.bias"},
                                std::pair{Llama3(), "lm_head.weight"}}) {
    const Weights w = FamilyWeights(f.shape);
    auto tensors = CheckpointTensors(f.shape, w);
    std::erase_if(tensors, [&](const Tensor& t) { return t.name == drop; });
    auto m = Model::Load(dir.Write(std::string(f.name) + "_missing", f, tensors, "F32"));
    EXPECT_TRUE(m.status().IsNotFound()) << m.status();
    ExpectRefused(m, drop);
  }
}

TEST(FamilyCheckpoint, RefusesAnUnknownModelTypeNamingIt) {
  FamilyDir dir;
  Family f = Llama3();
  f.config["model_type"] = "mistral";
  f.config["architectures"] = {"MistralForCausalLM"};
  const Weights w = FamilyWeights(f.shape);
  auto m = Model::Load(dir.Write("mistral", f, CheckpointTensors(f.shape, w), "BF16"));
  EXPECT_TRUE(m.status().IsNotSupported()) << m.status();
  ExpectRefused(m, "'model_type' is 'mistral'");
}

}  // namespace
}  // namespace switchyard::cpu_engine
