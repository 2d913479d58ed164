// UTF-8 text handled as JavaScript strings (chat_template/internal/utf.h, strings.h).
#include "chat_template/internal/utf.h"

#include <gtest/gtest.h>

#include "chat_template/internal/strings.h"

namespace switchyard::chat_template::internal {
namespace {

TEST(Utf, WhitespaceAndTrim) {
  EXPECT_EQ(Trim("\xE3\x80\x80 \t\nx y\xC2\xA0\r\n"), "x y");  // U+3000 and U+00A0 count
  EXPECT_EQ(TrimStart("  a "), "a ");
  EXPECT_EQ(TrimEnd("  a "), "  a");
  EXPECT_EQ(Trim("\xFF x \xFF"), "\xFF x \xFF");  // invalid bytes are not whitespace
}

TEST(Utf, Utf16View) {
  EXPECT_EQ(Utf16Length("a\xC3\xA9\xF0\x9F\x98\x80"), 4u);
  EXPECT_EQ(Utf16At("a\xC3\xA9", 1), "\xC3\xA9");
  EXPECT_EQ(Utf16At("ab", -1), "b");
  EXPECT_EQ(Utf16At("ab", 2), std::nullopt);
  EXPECT_EQ(Utf16At("\xF0\x9F\x98\x80", 0), "\xEF\xBF\xBD");  // half a surrogate pair
  EXPECT_EQ(CodePoints("a\xC3\xA9").size(), 2u);
  // U+FF5E sorts after U+1F600 in UTF-16 order (surrogates come first), unlike code points.
  EXPECT_GT(CompareUtf16("\xEF\xBD\x9E", "\xF0\x9F\x98\x80"), 0);
  EXPECT_LT(CompareUtf16("a", "ab"), 0);
}

TEST(Utf, CaseMapping) {
  EXPECT_EQ(ToUpper("abc \xC3\xA9\xC3\x9F"), "ABC \xC3\x89SS");
  EXPECT_EQ(ToLower("ABC \xC3\x89"), "abc \xC3\xA9");
  EXPECT_EQ(TitleCase("hello wORLD 3d x_y \xC3\xA9t\xC3\xA9"),
            "Hello WORLD 3d X_y \xC3\xA9T\xC3\xA9");
  EXPECT_EQ(Capitalize("hELLO"), "HELLO");
}

TEST(Strings, SplitAndReplace) {
  using V = std::vector<std::string>;
  EXPECT_EQ(SplitString("  a b  c ", std::nullopt, -1), (V{"a", "b", "c"}));
  EXPECT_EQ(SplitString("  a b  c ", std::nullopt, 1), (V{"a", "b  c "}));
  EXPECT_EQ(SplitString("a--b--c", std::string("--"), 1), (V{"a", "b--c"}));
  EXPECT_EQ(SplitString("", std::string(","), -1), (V{""}));
  EXPECT_EQ(ReplaceString("a\xC3\xA9", "", "-", std::nullopt, 1000), "-a-\xC3\xA9-");
  EXPECT_EQ(ReplaceString("aaaa", "aa", "b", std::nullopt, 1000), "bb");
  EXPECT_EQ(ReplaceString("aaa", "a", "b", 0.0, 1000), "aaa");
  EXPECT_EQ(IndentLines("a\n\nb", "  ", true, false, 1000), "  a\n\n  b");
  EXPECT_EQ(HtmlEscape("<a href=\"x\">'&'</a>"),
            "&lt;a href=&#34;x&#34;&gt;&#39;&amp;&#39;&lt;/a&gt;");
}

}  // namespace
}  // namespace switchyard::chat_template::internal
