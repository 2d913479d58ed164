// tokenizer/internal/word_cache.h: cached ids come back as put, the cache stays bounded,
// long words are not cached, and threads may share it.
#include "tokenizer/internal/word_cache.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

namespace switchyard::tokenizer::internal {
namespace {

std::vector<int32_t> Got(const WordCache& c, const std::string& w) {
  std::vector<int32_t> out = {-7};  // Get appends
  if (!c.Get(w, HashBytes(w), &out)) return {};
  return std::vector<int32_t>(out.begin() + 1, out.end());
}

void Put(const WordCache& c, const std::string& w, const std::vector<int32_t>& ids) {
  c.Put(w, HashBytes(w), ids.data(), ids.size());
}

TEST(WordCache, GivesBackWhatWasPut) {
  WordCache c;
  EXPECT_TRUE(Got(c, "hello").empty());
  Put(c, "hello", {1, 2, 3});
  Put(c, "help", {4});
  Put(c, "", {});
  EXPECT_EQ(Got(c, "hello"), (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(Got(c, "help"), (std::vector<int32_t>{4}));
  Put(c, "hello", {9});  // the first entry stays
  EXPECT_EQ(Got(c, "hello"), (std::vector<int32_t>{1, 2, 3}));
  std::vector<int32_t> out;
  EXPECT_TRUE(c.Get("", HashBytes(""), &out));
  EXPECT_TRUE(out.empty());
}

TEST(WordCache, LongWordsAreNotCached) {
  WordCache c;
  const std::string long_word(WordCache::kMaxWordBytes + 1, 'x');
  Put(c, long_word, {1});
  std::vector<int32_t> out;
  EXPECT_FALSE(c.Get(long_word, HashBytes(long_word), &out));
}

TEST(WordCache, StaysBounded) {
  WordCache c(1024);
  for (int i = 0; i < 100000; ++i) Put(c, "w" + std::to_string(i), {i});
  int kept = 0;
  for (int i = 0; i < 100000; ++i) {
    const auto ids = Got(c, "w" + std::to_string(i));
    if (ids.empty()) continue;
    ++kept;
    ASSERT_EQ(ids, (std::vector<int32_t>{i}));  // never another word's ids
  }
  EXPECT_GT(kept, 0);
  EXPECT_LE(kept, 1024);
}

TEST(WordCache, ThreadsShareIt) {
  WordCache c(4096);
  std::vector<int> wrong(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20000; ++i) {
        const int k = (i * 31 + t * 7) % 3000;
        const std::string w = "word" + std::to_string(k);
        const auto ids = Got(c, w);
        if (ids.empty()) {
          Put(c, w, {k, k + 1});
        } else if (ids != std::vector<int32_t>{k, k + 1}) {
          ++wrong[t];
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong, (std::vector<int>{0, 0, 0, 0}));
}

TEST(HashBytes, DependsOnEveryByteAndTheLength) {
  EXPECT_NE(HashBytes("abcdefgh1"), HashBytes("abcdefgh2"));
  EXPECT_NE(HashBytes("a"), HashBytes(std::string_view("a\0", 2)));
  EXPECT_NE(HashBytes(""), 0u);
  EXPECT_EQ(HashBytes("same words"), HashBytes(std::string("same words")));
}

}  // namespace
}  // namespace switchyard::tokenizer::internal
