// tokenizer/internal/regex_translate.h and regex.h: Oniguruma patterns of tokenizer.json
// given PCRE2 the meanings the reference JS port gives them, the JS split semantics, and
// the constructs refused by name.
#include "tokenizer/internal/regex_translate.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test_vocab.h"
#include "tokenizer/internal/regex.h"

namespace switchyard::tokenizer::internal {
namespace {

using Pieces = std::vector<std::string>;

Pieces SplitWith(const std::string& pcre2, std::string_view text, bool keep_gaps = true) {
  auto re = Regex::Compile(pcre2);
  EXPECT_TRUE(re.ok()) << re.status() << " for " << pcre2;
  if (!re.ok()) return {};
  std::vector<std::string_view> views;
  EXPECT_TRUE(re->Split(text, keep_gaps, &views).ok());
  return Pieces(views.begin(), views.end());
}

Pieces Split(std::string_view oniguruma, std::string_view text) {
  auto p = TranslatePattern(oniguruma);
  EXPECT_TRUE(p.ok()) << p.status() << " for " << oniguruma;
  return p.ok() ? SplitWith(*p, text) : Pieces{};
}

TEST(RegexTranslate, QwenPatternSplitsAsTheReference) {
  // Expected pieces are what @huggingface/tokenizers' Split gives for the same pattern.
  EXPECT_EQ(Split(testing::kQwenPattern, "Hello world, I'M here!!\n\n  x"),
            (Pieces{"Hello", " world", ",", " I", "'M", " here", "!!\n\n", " ", " x"}));
  EXPECT_EQ(Split(testing::kQwenPattern, "a 123\tb"), (Pieces{"a", " ", "1", "2", "3", "\tb"}));
  EXPECT_EQ(Split(testing::kQwenPattern, "x   \n\t y"), (Pieces{"x", "   \n", "\t", " y"}));
}

TEST(RegexTranslate, WhiteSpaceIsUnicodeWhiteSpace) {
  // \s is White_Space: U+0085 yes, U+FEFF no (JavaScript's own \s has it the other way).
  EXPECT_EQ(Split("\\s+", "a\u0085b"), (Pieces{"a", "\u0085", "b"}));
  EXPECT_EQ(Split("\\s+", "a\ufeffb"), (Pieces{"a\ufeffb"}));
  EXPECT_EQ(Split("\\S+", "a\u3000b"), (Pieces{"a", "\u3000", "b"}));
  EXPECT_EQ(Split("[\\s]+", "a\u2009\u0085b"), (Pieces{"a", "\u2009\u0085", "b"}));
}

TEST(RegexTranslate, Gpt2PatternUsesJavaScriptSpace) {
  // The ByteLevel pre-tokenizer's own pattern runs unrewritten in the JS port.
  EXPECT_EQ(SplitWith(Gpt2Pattern(), "Hello  world's\ufeffx", false),
            (Pieces{"Hello", " ", " world", "'s", "\ufeff", "x"}));
  EXPECT_EQ(SplitWith(Gpt2Pattern(), "a\u0085b", false), (Pieces{"a", "\u0085", "b"}));
}

TEST(RegexTranslate, CaseInsensitiveGroupsFoldAsciiOnly) {
  EXPECT_EQ(Split("(?i:'s)", "'S'ſ"), (Pieces{"'S", "'ſ"}));
  EXPECT_EQ(Split("(?i:ab)c", "ABcABC"), (Pieces{"ABc", "ABC"}));
  EXPECT_EQ(Split("(?i:[a-c]+)", "xAbCx"), (Pieces{"x", "AbC", "x"}));
  EXPECT_EQ(Split("(?i:[^a])", "aAb"), (Pieces{"aA", "b"}));
}

TEST(RegexTranslate, QuantifiersAsTheJsPort) {
  EXPECT_EQ(Split("\\p{N}{1,3}", "12345"), (Pieces{"123", "45"}));
  EXPECT_EQ(Split("a++", "aaab"), (Pieces{"aaa", "b"}));        // possessive: plain
  EXPECT_EQ(Split("a{2}+", "aaaaab"), (Pieces{"aaaa", "ab"}));  // stacked: (?:a{2})+
  EXPECT_EQ(Split("a{,2}b", "aaab"), (Pieces{"a", "aab"}));     // {,n} is {0,n}
  EXPECT_EQ(Split("(?>ab|a)c", "abc"), (Pieces{"abc"}));        // atomic: plain group
  EXPECT_EQ(Split("x{", "x{"), (Pieces{"x{"}));                 // a literal brace
}

TEST(RegexTranslate, AnchorsAndDotAreLineBased) {
  EXPECT_EQ(Split("^a", "a\na\r\na"), (Pieces{"a", "\n", "a", "\r\n", "a"}));
  EXPECT_EQ(Split("\\r$", "a\r\nb\r"), (Pieces{"a", "\r", "\nb", "\r"}));
  EXPECT_EQ(Split(".+", "ab\ncd"), (Pieces{"ab", "\n", "cd"}));
}

TEST(RegexTranslate, ClassesAndEscapes) {
  EXPECT_EQ(Split("[^\\r\\n\\p{L}\\p{N}]?\\p{L}+", "!abc"), (Pieces{"!abc"}));
  EXPECT_EQ(Split("[[:digit:]x]+", "a12x3b"), (Pieces{"a", "12x3", "b"}));
  EXPECT_EQ(Split("[.,[!?]]+", "a.,!b"), (Pieces{"a", ".,!", "b"}));  // nested: a union
  EXPECT_EQ(Split("\\x{4e2d}|\\u6587", "中文字"), (Pieces{"中", "文", "字"}));
  EXPECT_EQ(Split("[a\\-z]", "-b"), (Pieces{"-", "b"}));
  EXPECT_EQ(Split("\\d+", "a٣4b"), (Pieces{"a", "٣4", "b"}));
  EXPECT_EQ(Split("\\w+", "hé_2 ²"), (Pieces{"hé_2", " ", "²"}));
}

TEST(RegexSplit, EmptyMatchesStepOneCodePoint) {
  // JS matchAll: after an empty match the search resumes one code point later, and empty
  // matches are not pieces.
  EXPECT_EQ(SplitWith("x*", "aé中"), (Pieces{"a", "é", "中"}));
  EXPECT_EQ(SplitWith("(?=b)", "abab"), (Pieces{"a", "ba", "b"}));
  EXPECT_EQ(SplitWith("\\s", ""), Pieces{});
  EXPECT_EQ(SplitWith("\\s", "ab", false), Pieces{});
}

TEST(RegexTranslate, RefusesConstructsItCannotHonourByName) {
  struct Case {
    const char* pattern;
    const char* named;
  } cases[] = {
      {"\\Gab", "\\G"},
      {"(a)\\1", "\\1"},
      {"a\\Kb", "\\K"},
      {"(?x)a b", "inline flags"},
      {"[[:^alpha:]]", "negated POSIX"},
      {"[a-z&&[^aeiou]]", "intersection"},
      {"[a[^b]]", "negated class inside a class"},
      {"[[:foo:]]", "[:foo:]"},
      {"[\\W]", "\\W inside a class"},
      {"(ab", "unclosed"},
      {"ab)", "unbalanced"},
      {"[ab", "unterminated"},
      {"\\p{L!}", "property name"},
  };
  for (const auto& c : cases) {
    auto r = TranslatePattern(c.pattern);
    ASSERT_FALSE(r.ok()) << c.pattern << " gave " << *r;
    EXPECT_TRUE(r.status().IsNotSupported()) << r.status();
    EXPECT_NE(r.status().message().find(c.named), std::string::npos) << r.status();
    EXPECT_NE(r.status().message().find("at offset"), std::string::npos) << r.status();
  }
}

TEST(RegexCompile, ReportsPcre2Errors) {
  auto r = Regex::Compile("a(");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsInvalidArgument());
  EXPECT_NE(r.status().message().find("offset"), std::string::npos) << r.status();
  EXPECT_EQ(QuoteLiteral("a.b*"), "a\\.b\\*");
  EXPECT_EQ(SplitWith(QuoteLiteral("||"), "a||b"), (Pieces{"a", "||", "b"}));
}

TEST(RegexSplit, LongRunsDoNotExhaustTheStack) {
  auto p = TranslatePattern(testing::kQwenPattern);
  ASSERT_TRUE(p.ok());
  for (const std::string& text :
       {std::string(1 << 20, ' '), std::string(1 << 20, 'a'), std::string(1 << 20, '\n')}) {
    Pieces out = SplitWith(*p, text);
    ASSERT_FALSE(out.empty());
    size_t total = 0;
    for (const auto& s : out) total += s.size();
    EXPECT_EQ(total, text.size());
  }
}

}  // namespace
}  // namespace switchyard::tokenizer::internal
