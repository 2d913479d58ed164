// BpeTokenizer::Decode and TokenBytes on a small vocabulary: bytes reassembled across
// tokens, ill-formed bytes replaced per run of regular tokens, skipped ids, the clean-up
// option.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test_vocab.h"

namespace switchyard::tokenizer {
namespace {

using testing::json;

const std::string kFffd = "\xEF\xBF\xBD";

std::unique_ptr<BpeTokenizer> DecodeTokenizer(const std::string& name) {
  json j = testing::TinyTokenizer({{"\xE2", "\x82"}});
  j["added_tokens"] = {testing::AddedToken(300, "<s>", true)};
  return testing::MustLoad(testing::WriteCheckpoint(name, j));
}

TEST(Decode, BytesOfSeveralTokensMakeOneCharacter) {
  auto t = DecodeTokenizer("dec_join");
  EXPECT_EQ(t->Decode(std::vector<int32_t>{0xE2, 0x82, 0xAC}), "€");
  EXPECT_EQ(t->Decode(std::vector<int32_t>{256, 0xAC}), "€");  // 256: the merge E2 82
  EXPECT_EQ(t->TokenBytes(256), "\xE2\x82");                   // raw, not UTF-8 alone
  EXPECT_EQ(t->TokenBytes(0xE2), "\xE2");
  EXPECT_EQ(t->TokenBytes(-1), "");
  EXPECT_EQ(t->TokenBytes(5000), "");
}

TEST(Decode, IllFormedBytesBecomeReplacementCharacters) {
  auto t = DecodeTokenizer("dec_fffd");
  EXPECT_EQ(t->Decode(std::vector<int32_t>{'a', 0xFF, 'b'}), "a" + kFffd + "b");
  EXPECT_EQ(t->Decode(std::vector<int32_t>{0xE2, 0x82}), kFffd);
  // Each run of regular tokens is decoded on its own: an added token cuts a character.
  EXPECT_EQ(t->Decode(std::vector<int32_t>{0xE2, 300, 0x82, 0xAC}), kFffd + "<s>" + kFffd + kFffd);
  // Skipping the special token joins the runs again.
  DecodeOptions skip;
  skip.skip_special_tokens = true;
  EXPECT_EQ(t->Decode(std::vector<int32_t>{0xE2, 300, 0x82, 0xAC}, skip), "€");
}

TEST(Decode, IdsWithoutTokensAreSkipped) {
  auto t = DecodeTokenizer("dec_skip");
  EXPECT_EQ(t->Decode(std::vector<int32_t>{'h', -5, 299, 'i', 1 << 30}), "hi");
  EXPECT_EQ(t->Decode(std::vector<int32_t>{}), "");
  EXPECT_EQ(t->vocab_size(), 301);
}

TEST(Decode, CleanUpTokenizationSpacesIsOptIn) {
  auto t = DecodeTokenizer("dec_clean");
  const std::string text = "Hello , world . I 'm sure it 's so ! Is n't it ?";
  auto ids = testing::MustEncode(*t, text);
  EXPECT_EQ(t->Decode(ids), text);
  DecodeOptions clean;
  clean.clean_up_tokenization_spaces = true;
  EXPECT_EQ(t->Decode(ids, clean), "Hello, world. I'm sure it's so! Isn't it?");
}

TEST(Encode, RefusesTextThatIsNotUtf8) {
  auto t = DecodeTokenizer("enc_utf8");
  auto r = t->Encode("ok \xC3(");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsInvalidArgument());
  EXPECT_NE(r.status().message().find("offset 3"), std::string::npos) << r.status();
  std::vector<int32_t> ids = {7};
  EXPECT_FALSE(t->EncodeTo("\xFF", {}, &ids).ok());
  EXPECT_EQ(ids, (std::vector<int32_t>{7}));
  ASSERT_TRUE(t->EncodeTo("ab", {}, &ids).ok());
  EXPECT_EQ(ids, (std::vector<int32_t>{7, 'a', 'b'}));
  EXPECT_EQ(testing::MustEncode(*t, ""), std::vector<int32_t>{});
}

}  // namespace
}  // namespace switchyard::tokenizer
