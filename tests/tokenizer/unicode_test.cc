// tokenizer/internal/unicode.h and byte_level.h: validation, the decoder's U+FFFD
// replacement (WHATWG's maximal subparts), White_Space and word characters, the byte-level
// alphabet.
#include "tokenizer/internal/unicode.h"

#include <gtest/gtest.h>

#include "tokenizer/internal/byte_level.h"

namespace switchyard::tokenizer::internal {
namespace {

std::string Sanitized(std::string_view bytes) {
  std::string out;
  AppendSanitizedUtf8(bytes, &out);
  return out;
}

const std::string kFffd = "\xEF\xBF\xBD";

TEST(Utf8, FirstInvalidNamesTheOffset) {
  EXPECT_EQ(FirstInvalidUtf8("plain"), -1);
  EXPECT_EQ(FirstInvalidUtf8("é€𝄞"), -1);
  EXPECT_EQ(FirstInvalidUtf8("ab\xff"), 2);
  EXPECT_EQ(FirstInvalidUtf8("ok \xc3"), 3);
  EXPECT_EQ(FirstInvalidUtf8("\xc0\xaf"), 0);       // overlong
  EXPECT_EQ(FirstInvalidUtf8("x\xed\xa0\x80"), 1);  // surrogate
  EXPECT_TRUE(IsAscii("0123456789abcdef ~"));
  EXPECT_FALSE(IsAscii("0123456789abcdefé"));
}

TEST(Utf8, SanitizeReplacesEachMaximalSubpart) {
  EXPECT_EQ(Sanitized("héllo"), "héllo");
  EXPECT_EQ(Sanitized("a\xff"
                      "b"),
            "a" + kFffd + "b");
  // A sequence cut short is one U+FFFD; its bytes are a maximal subpart.
  EXPECT_EQ(Sanitized("\xF0\x9F\x98"), kFffd);
  EXPECT_EQ(Sanitized("\xF0\x9F\x98"
                      "A"),
            kFffd + "A");
  // A lead byte whose second byte is out of its range: the lead alone, then the rest.
  EXPECT_EQ(Sanitized("\xE0\x80\x80"), kFffd + kFffd + kFffd);  // overlong
  EXPECT_EQ(Sanitized("\xED\xA0\x80"), kFffd + kFffd + kFffd);  // surrogate
  EXPECT_EQ(Sanitized("\xF4\x90\x80\x80"), kFffd + kFffd + kFffd + kFffd);
  EXPECT_EQ(Sanitized("\xC0\xAF"), kFffd + kFffd);
  EXPECT_EQ(Sanitized("\x80\xBF"), kFffd + kFffd);
  EXPECT_EQ(Sanitized("\xE2\x82"), kFffd);
  EXPECT_EQ(Sanitized("\xE2\x82\xAC\xE2"), "€" + kFffd);
}

TEST(Utf8, CodePointsBothWays) {
  const std::string s = "a€𝄞";
  size_t i = 0;
  EXPECT_EQ(NextCodePoint(s, &i), U'a');
  EXPECT_EQ(NextCodePoint(s, &i), U'€');
  EXPECT_EQ(NextCodePoint(s, &i), U'𝄞');
  EXPECT_EQ(i, s.size());
  size_t start = 0;
  EXPECT_EQ(PreviousCodePoint(s, s.size(), &start), U'𝄞');
  EXPECT_EQ(start, 4u);
  std::string out;
  for (char32_t cp : {U'a', U'€', U'𝄞', U'\u00e9'}) AppendUtf8(cp, &out);
  EXPECT_EQ(out, "a€𝄞é");
}

TEST(UnicodeProperties, WhiteSpaceAndWordCharacters) {
  for (char32_t cp : {U' ', U'\t', U'\n', U'\r', U'\v', U'\f', U'\u0085', U'\u00a0', U'\u2009',
                      U'\u3000', U'\u2028'}) {
    EXPECT_TRUE(IsWhiteSpace(cp)) << static_cast<int>(cp);
  }
  EXPECT_FALSE(IsWhiteSpace(U'\ufeff'));  // not White_Space (JavaScript's \s has it)
  EXPECT_FALSE(IsWhiteSpace(U'\u200b'));
  EXPECT_FALSE(IsWhiteSpace(U'x'));
  for (char32_t cp : {U'a', U'Z', U'7', U'_', U'é', U'中', U'\u0301', U'\u200d', U'٣'}) {
    EXPECT_TRUE(IsWordCharacter(cp)) << static_cast<int>(cp);
  }
  for (char32_t cp : {U' ', U'-', U'.', U'<', U'🚀', U'½'}) {
    EXPECT_FALSE(IsWordCharacter(cp)) << static_cast<int>(cp);
  }
  EXPECT_EQ(LeadingWhiteSpace(" \t\u3000x "), 5u);
  EXPECT_EQ(TrailingWhiteSpace("x \n\u00a0"), 4u);
  EXPECT_EQ(LeadingWhiteSpace("x"), 0u);
  EXPECT_EQ(TrailingWhiteSpace(""), 0u);
}

TEST(ByteLevel, AlphabetRoundTrips) {
  EXPECT_EQ(ByteLevelChar(' '), "Ġ");
  EXPECT_EQ(ByteLevelChar('\n'), "Ċ");
  EXPECT_EQ(ByteLevelChar('a'), "a");
  EXPECT_EQ(ByteLevelChar(0), "Ā");
  EXPECT_EQ(ByteLevelChar(0xAD), "Ń");
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  const std::string text = BytesToByteLevel(all);
  auto back = ByteLevelToBytes(text);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, all);
  EXPECT_EQ(ByteLevelToBytes("ĠHello"), " Hello");
  EXPECT_FALSE(ByteLevelToBytes("中").has_value());  // not in the alphabet
  EXPECT_FALSE(ByteLevelToBytes(" ").has_value());   // the space byte is written Ġ
}

}  // namespace
}  // namespace switchyard::tokenizer::internal
