// tokenizer/internal/bpe_model.h through BpeTokenizer on small vocabularies: the merge loop
// (short and long words) against a plain reference implementation written here, merge
// ranks, both JSON forms of merges, ignore_merges.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "test_vocab.h"

namespace switchyard::tokenizer {
namespace {

using testing::json;
using Merges = std::vector<std::pair<std::string, std::string>>;

// BPE as the reference describes it: merge the adjacent pair of lowest rank (a repeated
// pair ranks as its last occurrence), the leftmost on a tie, until none has a rank.
std::vector<std::string> ReferenceBpe(const Merges& merges, const std::string& word) {
  std::map<std::pair<std::string, std::string>, size_t> rank;
  for (size_t i = 0; i < merges.size(); ++i) rank[merges[i]] = i;
  std::vector<std::string> s;
  for (char c : word) s.emplace_back(1, c);
  while (s.size() > 1) {
    size_t best = s.size();
    size_t best_rank = SIZE_MAX;
    for (size_t i = 0; i + 1 < s.size(); ++i) {
      auto it = rank.find({s[i], s[i + 1]});
      if (it != rank.end() && it->second < best_rank) best = i, best_rank = it->second;
    }
    if (best == s.size()) break;
    s[best] += s[best + 1];
    s.erase(s.begin() + static_cast<long>(best) + 1);
  }
  return s;
}

std::vector<int32_t> Ids(const BpeTokenizer& t, const std::vector<std::string>& tokens) {
  std::vector<int32_t> ids;
  for (const auto& tok : tokens) ids.push_back(t.TokenToId(internal::BytesToByteLevel(tok)));
  return ids;
}

// Random merges over {a, b, c}: each joins two tokens that exist already.
Merges RandomMerges(std::mt19937* rng, int n) {
  std::vector<std::string> tokens = {"a", "b", "c"};
  Merges merges;
  while (static_cast<int>(merges.size()) < n) {
    const std::string& l = tokens[(*rng)() % tokens.size()];
    const std::string& r = tokens[(*rng)() % tokens.size()];
    if (l.size() + r.size() > 12) continue;
    merges.emplace_back(l, r);
    tokens.push_back(l + r);
  }
  return merges;
}

TEST(BpeModel, MergesAsTheReferenceOnShortAndLongWords) {
  std::mt19937 rng(7);
  const Merges merges = RandomMerges(&rng, 300);
  auto tok =
      testing::MustLoad(testing::WriteCheckpoint("bpe_random", testing::TinyTokenizer(merges, "")));
  for (int i = 0; i < 600; ++i) {
    const size_t len = 1 + rng() % (i % 3 == 0 ? 400 : 40);  // past the short-word limit too
    std::string word;
    const int letters = 1 + static_cast<int>(rng() % 3);
    for (size_t k = 0; k < len; ++k) word.push_back(static_cast<char>('a' + rng() % letters));
    const auto expected = Ids(*tok, ReferenceBpe(merges, word));
    ASSERT_EQ(testing::MustEncode(*tok, word), expected) << word;
    // Again, from the per-word cache.
    ASSERT_EQ(testing::MustEncode(*tok, word), expected) << word;
  }
}

TEST(BpeModel, LowerRankMergesFirstAndRepeatedPairsRankLast) {
  // (a,b) is listed again after (b,c): its rank is the later one, so "abc" is a + bc.
  const Merges merges = {{"a", "b"}, {"b", "c"}, {"a", "b"}};
  auto tok =
      testing::MustLoad(testing::WriteCheckpoint("bpe_rank", testing::TinyTokenizer(merges, "")));
  EXPECT_EQ(testing::MustEncode(*tok, "abc"), Ids(*tok, {"a", "bc"}));
  EXPECT_EQ(testing::MustEncode(*tok, "abab"), Ids(*tok, {"ab", "ab"}));
  // A tie goes to the leftmost pair.
  auto tie = testing::MustLoad(
      testing::WriteCheckpoint("bpe_tie", testing::TinyTokenizer({{"a", "a"}}, "")));
  EXPECT_EQ(testing::MustEncode(*tie, "aaa"), Ids(*tie, {"aa", "a"}));
}

TEST(BpeModel, BothMergeFormsAreTheSame) {
  const Merges merges = {{"h", "e"}, {"l", "l"}, {"he", "ll"}, {"hell", "o"}};
  json pairs = testing::TinyTokenizer(merges);
  json strings = pairs;
  json list = json::array();
  for (const auto& m : pairs["model"]["merges"]) {
    list.push_back(m[0].get<std::string>() + " " + m[1].get<std::string>());
  }
  strings["model"]["merges"] = list;
  auto a = testing::MustLoad(testing::WriteCheckpoint("bpe_pairs", pairs));
  auto b = testing::MustLoad(testing::WriteCheckpoint("bpe_strings", strings));
  const auto ids = testing::MustEncode(*a, "hello hell");
  EXPECT_EQ(ids, testing::MustEncode(*b, "hello hell"));
  EXPECT_EQ(ids, Ids(*a, {"hello", " ", "hell"}));
}

TEST(BpeModel, IgnoreMergesTakesWholeWordsFromTheVocabulary) {
  json j = testing::TinyTokenizer({{"b", "c"}}, "");
  j["model"]["vocab"]["abc"] = 300;  // in the vocabulary, but no merge makes it
  auto plain = testing::MustLoad(testing::WriteCheckpoint("bpe_plain", j));
  EXPECT_EQ(testing::MustEncode(*plain, "abc"), Ids(*plain, {"a", "bc"}));
  j["model"]["ignore_merges"] = true;
  auto ignoring = testing::MustLoad(testing::WriteCheckpoint("bpe_ignore", j));
  EXPECT_EQ(testing::MustEncode(*ignoring, "abc"), (std::vector<int32_t>{300}));
  EXPECT_EQ(testing::MustEncode(*ignoring, "abcb"), Ids(*ignoring, {"a", "bc", "b"}));
  EXPECT_EQ(ignoring->vocab_size(), 301);
}

TEST(BpeModel, BytesMissingFromTheVocabularyBecomeUnkOrNothing) {
  json j = testing::TinyTokenizer({});
  j["model"]["vocab"].erase(internal::BytesToByteLevel("z"));
  auto dropped = testing::MustLoad(testing::WriteCheckpoint("bpe_nounk", j));
  EXPECT_EQ(testing::MustEncode(*dropped, "azb"), (std::vector<int32_t>{'a', 'b'}));
  j["model"]["unk_token"] = "Ā";  // byte 0 stands in as the unknown token
  auto unk = testing::MustLoad(testing::WriteCheckpoint("bpe_unk", j));
  EXPECT_EQ(testing::MustEncode(*unk, "azb"), (std::vector<int32_t>{'a', 0, 'b'}));
}

}  // namespace
}  // namespace switchyard::tokenizer
