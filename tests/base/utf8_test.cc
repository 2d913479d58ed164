#include "base/utf8.h"

#include <gtest/gtest.h>

namespace switchyard {
namespace {

TEST(Utf8, SequenceLengths) {
  EXPECT_EQ(Utf8SequenceLength("a", 0), 1u);
  EXPECT_EQ(Utf8SequenceLength("\xc3\xa9", 0), 2u);          // é
  EXPECT_EQ(Utf8SequenceLength("\xe2\x82\xac", 0), 3u);      // €
  EXPECT_EQ(Utf8SequenceLength("\xf0\x9f\x98\x80", 0), 4u);  // 😀
  EXPECT_EQ(Utf8SequenceLength("x\xc3\xa9", 1), 2u);
}

TEST(Utf8, MalformedIsZero) {
  EXPECT_EQ(Utf8SequenceLength("\xff", 0), 0u);
  EXPECT_EQ(Utf8SequenceLength("\x80", 0), 0u);              // a continuation byte
  EXPECT_EQ(Utf8SequenceLength("\xc0\xaf", 0), 0u);          // overlong '/'
  EXPECT_EQ(Utf8SequenceLength("\xe0\x80\xaf", 0), 0u);      // overlong
  EXPECT_EQ(Utf8SequenceLength("\xed\xa0\x80", 0), 0u);      // a surrogate
  EXPECT_EQ(Utf8SequenceLength("\xf4\x90\x80\x80", 0), 0u);  // above U+10FFFF
  EXPECT_EQ(Utf8SequenceLength("\xe2\x82", 0), 0u);          // cut short
  EXPECT_EQ(Utf8SequenceLength("\xc3", 0), 0u);
}

TEST(Utf8, Utf8ProblemNamesTheByteAndOffset) {
  EXPECT_EQ(Utf8Problem(""), "");
  EXPECT_EQ(Utf8Problem("plain\ttext\n"), "") << "controls are UTF-8";
  EXPECT_EQ(Utf8Problem("ok \xe2\x9c\x93 \xf4\x8f\xbf\xbf"), "");
  EXPECT_EQ(Utf8Problem("ab\xff"), "byte 0xFF at offset 2 is not UTF-8");
  EXPECT_EQ(Utf8Problem("\xc0\x80"), "byte 0xC0 at offset 0 is not UTF-8") << "overlong";
  EXPECT_EQ(Utf8Problem("\xf4\x90\x80\x80"), "byte 0xF4 at offset 0 is not UTF-8")
      << "above U+10FFFF";
  EXPECT_EQ(Utf8Problem("x\xe2\x9c"), "byte 0xE2 at offset 1 is not UTF-8") << "truncated";
  EXPECT_EQ(TextProblem("a\tb"), "control character U+0009 at offset 1 is not allowed");
  EXPECT_EQ(TextProblem("\xc2\x9f"), "control character U+009F at offset 0 is not allowed");
  EXPECT_EQ(TextProblem("caf\xc3\xa9 \xc2\xa0"), "");
}

}  // namespace
}  // namespace switchyard
