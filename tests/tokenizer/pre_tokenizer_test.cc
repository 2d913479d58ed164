// tokenizer/internal/pre_tokenizer.h and normalizer.h: Split stages in sequence, ByteLevel's
// prefix space (per piece, as the reference does) and GPT-2 pattern, NFC with its ASCII
// and already-normalized fast paths, and what each refuses.
#include "tokenizer/internal/pre_tokenizer.h"

#include <gtest/gtest.h>

#include <deque>
#include <string>
#include <vector>

#include "tokenizer/internal/normalizer.h"

namespace switchyard::tokenizer::internal {
namespace {

using Words = std::vector<std::string>;

Json SplitJson(const std::string& regex) {
  return {{"type", "Split"},
          {"pattern", {{"Regex", regex}}},
          {"behavior", "Isolated"},
          {"invert", false}};
}
Json ByteLevel(bool prefix, bool regex) {
  return {{"type", "ByteLevel"}, {"add_prefix_space", prefix}, {"use_regex", regex}};
}

Words PreTokenize(const Json& j, std::string_view text) {
  auto p = PreTokenizer::FromJson(j, "tokenizer.json");
  EXPECT_TRUE(p.ok()) << p.status();
  if (!p.ok()) return {};
  std::vector<std::string_view> words;
  std::deque<std::string> storage;
  EXPECT_TRUE(p->Run(text, &words, &storage).ok());
  return Words(words.begin(), words.end());
}

TEST(PreTokenizer, SplitStagesThenByteLevel) {
  const Json seq = {
      {"type", "Sequence"},
      {"pretokenizers", {SplitJson("\\s+"), SplitJson("\\d"), ByteLevel(false, false)}}};
  EXPECT_EQ(PreTokenize(seq, "ab12 c"), (Words{"ab", "1", "2", " ", "c"}));
  const Json literal = {{"type", "Sequence"},
                        {"pretokenizers",
                         {{{"type", "Split"},
                           {"pattern", {{"String", "::"}}},
                           {"behavior", "Isolated"},
                           {"invert", false}},
                          ByteLevel(false, false)}}};
  EXPECT_EQ(PreTokenize(literal, "a::b.c"), (Words{"a", "::", "b.c"}));
}

TEST(PreTokenizer, PrefixSpaceGoesBeforeEveryPiece) {
  const Json seq = {{"type", "Sequence"},
                    {"pretokenizers", {SplitJson(","), ByteLevel(true, false)}}};
  EXPECT_EQ(PreTokenize(seq, "a, b"), (Words{" a", " ,", " b"}));
}

TEST(PreTokenizer, ByteLevelAloneUsesTheGpt2Pattern) {
  EXPECT_EQ(PreTokenize(ByteLevel(false, true), "Hello  world's 42!"),
            (Words{"Hello", " ", " world", "'s", " 42", "!"}));
  EXPECT_EQ(PreTokenize(ByteLevel(true, true), "Hi"), (Words{" Hi"}));
  EXPECT_EQ(PreTokenize(ByteLevel(false, false), "a b"), (Words{"a b"}));
}

TEST(PreTokenizer, RefusesWhatItDoesNotHave) {
  const Json bad[] = {
      {{"type", "Whitespace"}},
      {{"type", "Sequence"}, {"pretokenizers", {ByteLevel(false, false), SplitJson("x")}}},
      {{"type", "Sequence"}, {"pretokenizers", {SplitJson("x")}}},
      {{"type", "Sequence"}, {"pretokenizers", Json::array()}},
  };
  for (const Json& j : bad) {
    auto p = PreTokenizer::FromJson(j, "f.json");
    ASSERT_FALSE(p.ok()) << j.dump();
    EXPECT_NE(p.status().message().find("f.json: pre_tokenizer"), std::string::npos) << p.status();
  }
}

TEST(Normalizer, NfcWithFastPaths) {
  auto n = Normalizer::FromJson({{"type", "Sequence"}, {"normalizers", {{{"type", "NFC"}}}}}, "f");
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_TRUE(n->active());
  std::string scratch;
  const std::string ascii = "plain text", nfc = "caf\u00e9", nfd = "cafe\u0301";
  EXPECT_EQ(n->Apply(ascii, &scratch)->data(), ascii.data());  // no copy
  EXPECT_EQ(n->Apply(nfc, &scratch)->data(), nfc.data());      // already NFC: no copy
  EXPECT_EQ(*n->Apply(nfd, &scratch), nfc);
  EXPECT_EQ(*n->Apply("\u212b\u2126", &scratch), "\u00c5\u03a9");  // singletons
  auto none = Normalizer::FromJson(nullptr, "f");
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none->Apply(nfd, &scratch), nfd);
}

TEST(Normalizer, RefusesOtherTypesByName) {
  auto n = Normalizer::FromJson({{"type", "NFKC"}}, "f.json");
  ASSERT_FALSE(n.ok());
  EXPECT_TRUE(n.status().IsNotSupported());
  EXPECT_NE(n.status().message().find("f.json: normalizer.type: \"NFKC\""), std::string::npos)
      << n.status();
}

}  // namespace
}  // namespace switchyard::tokenizer::internal
