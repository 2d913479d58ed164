// tokenizer/internal/added_tokens.h through BpeTokenizer: added tokens found before
// normalization and BPE, leftmost-longest, with their lstrip / rstrip / single_word /
// normalized flags and split_special_tokens.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test_vocab.h"

namespace switchyard::tokenizer {
namespace {

using testing::json;

// With no merges every byte of plain text is its own id.
std::vector<int32_t> Bytes(std::string_view s) {
  std::vector<int32_t> ids;
  for (unsigned char c : s) ids.push_back(c);
  return ids;
}

std::vector<int32_t> Cat(std::initializer_list<std::vector<int32_t>> parts) {
  std::vector<int32_t> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

std::unique_ptr<BpeTokenizer> WithAdded(const std::string& name, const json& added,
                                        bool nfc = false) {
  json j = testing::TinyTokenizer({});
  j["added_tokens"] = added;
  if (nfc) j["normalizer"] = {{"type", "NFC"}};
  return testing::MustLoad(testing::WriteCheckpoint(name, j));
}

json Raw(int id, const std::string& content, bool special) {
  json t = testing::AddedToken(id, content, special);
  t["normalized"] = false;
  return t;
}

TEST(AddedTokens, LeftmostLongestSpecialAndNot) {
  auto t = WithAdded("added_basic", json::array({Raw(300, "<|x|>", true), Raw(301, "<|x|>y", false),
                                                 Raw(302, "|x", false)}));
  EXPECT_EQ(testing::MustEncode(*t, "a<|x|>b"), Cat({Bytes("a"), {300}, Bytes("b")}));
  EXPECT_EQ(testing::MustEncode(*t, "<|x|>y<|x|>"), (std::vector<int32_t>{301, 300}));
  EXPECT_EQ(testing::MustEncode(*t, "<|x"), Cat({Bytes("<"), {302}}));
  EXPECT_EQ(testing::MustEncode(*t, "<|x|"), Cat({Bytes("<"), {302}, Bytes("|")}));
  EXPECT_EQ(t->vocab_size(), 303);
  EXPECT_EQ(t->TokenToId("<|x|>y"), 301);
  EXPECT_TRUE(t->IsSpecial(300));
  EXPECT_FALSE(t->IsSpecial(301));
  // Normalized tokens are looked for only in the text between the others.
  auto two =
      WithAdded("added_passes",
                json::array({Raw(300, "<|x|>", true), testing::AddedToken(301, "<|x|>y", false)}));
  EXPECT_EQ(testing::MustEncode(*two, "<|x|>y"), Cat({{300}, Bytes("y")}));
}

TEST(AddedTokens, LstripAndRstripTakeTheWhiteSpaceAround) {
  json l = testing::AddedToken(300, "<m>", true);
  l["lstrip"] = true;
  json r = testing::AddedToken(301, "<n>", true);
  r["rstrip"] = true;
  auto t = WithAdded("added_strip", json::array({l, r}));
  EXPECT_EQ(testing::MustEncode(*t, "a \t<m> b"), Cat({Bytes("a"), {300}, Bytes(" b")}));
  EXPECT_EQ(testing::MustEncode(*t, "a <n> \n b"), Cat({Bytes("a "), {301}, Bytes("b")}));
  // lstrip never reaches back into the token before it.
  EXPECT_EQ(testing::MustEncode(*t, "<n>  <m>"), (std::vector<int32_t>{301, 300}));
  EXPECT_EQ(testing::MustEncode(*t, "\u3000<m>"), (std::vector<int32_t>{300}));
  // U+FEFF is not White_Space.
  EXPECT_EQ(testing::MustEncode(*t, "\ufeff<m>"), Cat({Bytes("\ufeff"), {300}}));
}

TEST(AddedTokens, SingleWordNeedsNoWordCharacterAround) {
  json w = testing::AddedToken(300, "tok", false);
  w["single_word"] = true;
  auto t = WithAdded("added_single", json::array({w}));
  EXPECT_EQ(testing::MustEncode(*t, "tok"), (std::vector<int32_t>{300}));
  EXPECT_EQ(testing::MustEncode(*t, "a tok."), Cat({Bytes("a "), {300}, Bytes(".")}));
  EXPECT_EQ(testing::MustEncode(*t, "atok"), Bytes("atok"));
  EXPECT_EQ(testing::MustEncode(*t, "tok_"), Bytes("tok_"));
  EXPECT_EQ(testing::MustEncode(*t, "étok"), Bytes("étok"));
  EXPECT_EQ(testing::MustEncode(*t, "toktok tok"), Cat({Bytes("toktok "), {300}}));
}

TEST(AddedTokens, NormalizedTokensMatchTheNormalizedText) {
  // "é" precomposed, normalized: matches "e" + U+0301 once NFC made it "é".
  // "a\u0301x", not normalized: matches only those raw bytes, before normalization.
  json raw = testing::AddedToken(301, "a\u0301x", true);
  auto t =
      WithAdded("added_norm", json::array({testing::AddedToken(300, "\u00e9", false), raw}), true);
  EXPECT_EQ(testing::MustEncode(*t, "e\u0301"), (std::vector<int32_t>{300}));
  EXPECT_EQ(testing::MustEncode(*t, "\u00e9!"), Cat({{300}, Bytes("!")}));
  EXPECT_EQ(testing::MustEncode(*t, "a\u0301x"), (std::vector<int32_t>{301}));
  EXPECT_EQ(testing::MustEncode(*t, "a\u0301y"), Bytes("\u00e1y"));  // NFC, then bytes
}

TEST(AddedTokens, SplitSpecialTokensLeavesSpecialsAsText) {
  auto t = WithAdded("added_split", json::array({testing::AddedToken(300, "<s>", true),
                                                 testing::AddedToken(301, "<t>", false)}));
  EXPECT_EQ(testing::MustEncode(*t, "<s><t>"), (std::vector<int32_t>{300, 301}));
  EncodeOptions split;
  split.split_special_tokens = true;
  EXPECT_EQ(testing::MustEncode(*t, "<s><t>", split), Cat({Bytes("<s>"), {301}}));
}

TEST(AddedTokens, DecodeGivesTheirContent) {
  auto t = WithAdded("added_decode", json::array({testing::AddedToken(300, "<s>", true),
                                                  testing::AddedToken(301, "<t>", false)}));
  const std::vector<int32_t> ids = Cat({{300}, Bytes("hi "), {301}, Bytes("!")});
  EXPECT_EQ(t->Decode(ids), "<s>hi <t>!");
  DecodeOptions skip;
  skip.skip_special_tokens = true;
  EXPECT_EQ(t->Decode(ids, skip), "hi <t>!");
  EXPECT_EQ(t->TokenBytes(300), "<s>");
  EXPECT_EQ(t->metadata().AddedTokenId("<t>"), 301);
  EXPECT_EQ(t->metadata().AddedTokenContent(300), "<s>");
  EXPECT_EQ(t->metadata().AddedTokenContent(5), "");
}

TEST(AddedTokens, AnAddedTokenMayTakeAVocabularyId) {
  // An added token with the id of a vocabulary entry: matched as added, decoded as added.
  auto t = WithAdded("added_shared", json::array({testing::AddedToken(65, "<A>", true)}));
  EXPECT_EQ(testing::MustEncode(*t, "x<A>"), Cat({Bytes("x"), {65}}));
  EXPECT_EQ(t->Decode(std::vector<int32_t>{65, 'B'}), "<A>B");
  EXPECT_EQ(t->vocab_size(), 256);
}

}  // namespace
}  // namespace switchyard::tokenizer
