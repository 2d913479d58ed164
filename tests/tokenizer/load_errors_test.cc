// BpeTokenizer::Load's errors: each names the file and the JSON path of what is wrong or
// unsupported, with the status code the interface documents.
#include <gtest/gtest.h>

#include <string>

#include "test_vocab.h"

namespace switchyard::tokenizer {
namespace {

using testing::json;

// Loads `j` written as tokenizer.json; expects a failure with `code` whose message names
// the file and holds each of `parts`.
void ExpectError(const std::string& name, const json& j, StatusCode code,
                 std::initializer_list<std::string> parts) {
  const std::string dir = testing::WriteCheckpoint(name, j);
  auto t = BpeTokenizer::Load(dir);
  ASSERT_FALSE(t.ok()) << name;
  EXPECT_EQ(t.status().code(), code) << t.status();
  EXPECT_NE(t.status().message().find(dir + "/tokenizer.json: "), std::string::npos) << t.status();
  for (const auto& p : parts)
    EXPECT_NE(t.status().message().find(p), std::string::npos) << t.status();
}

json Tiny() { return testing::TinyTokenizer({{"a", "b"}}); }

TEST(LoadErrors, MissingOrUnparseableTokenizerJson) {
  const std::string empty = testing::FreshDir("err_missing");
  auto missing = BpeTokenizer::Load(empty);
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(missing.status().IsNotFound()) << missing.status();
  EXPECT_NE(missing.status().message().find(empty + "/tokenizer.json"), std::string::npos);

  const std::string dir = testing::FreshDir("err_unparseable");
  testing::WriteFile(dir + "/tokenizer.json", "{\"model\": {\"type\": \"BPE\",");
  auto bad = BpeTokenizer::Load(dir);
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(bad.status().IsInvalidArgument()) << bad.status();
  EXPECT_NE(bad.status().message().find(dir + "/tokenizer.json: not valid JSON"), std::string::npos)
      << bad.status();
  ExpectError("err_array", json::array(), StatusCode::kInvalidArgument, {"must be a JSON object"});
}

TEST(LoadErrors, UnsupportedModelTypeAndOptions) {
  json j = Tiny();
  j["model"]["type"] = "Unigram";
  ExpectError("err_model", j, StatusCode::kNotSupported, {"model.type", "\"Unigram\""});
  for (const auto& [key, value] : std::vector<std::pair<std::string, json>>{
           {"dropout", 0.1}, {"byte_fallback", true}, {"continuing_subword_prefix", "##"}}) {
    json k = Tiny();
    k["model"][key] = value;
    ExpectError("err_" + key, k, StatusCode::kNotSupported, {"model." + key});
  }
  json trunc = Tiny();
  trunc["truncation"] = {{"max_length", 512}};
  ExpectError("err_trunc", trunc, StatusCode::kNotSupported, {"truncation"});
}

TEST(LoadErrors, UnsupportedPreTokenizers) {
  json meta = Tiny();
  meta["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", "▁"}};
  ExpectError("err_pre", meta, StatusCode::kNotSupported, {"pre_tokenizer.type", "Metaspace"});
  json digits = Tiny();
  digits["pre_tokenizer"]["pretokenizers"][0] = {{"type", "Digits"}};
  ExpectError("err_digits", digits, StatusCode::kNotSupported,
              {"pre_tokenizer.pretokenizers[0].type", "Digits"});
  json removed = Tiny();
  removed["pre_tokenizer"]["pretokenizers"][0]["behavior"] = "Removed";
  ExpectError("err_behavior", removed, StatusCode::kNotSupported,
              {"pre_tokenizer.pretokenizers[0].behavior", "Removed"});
  json inverted = Tiny();
  inverted["pre_tokenizer"]["pretokenizers"][0]["invert"] = true;
  ExpectError("err_invert", inverted, StatusCode::kNotSupported,
              {"pre_tokenizer.pretokenizers[0].invert"});
  json anchor = Tiny();
  anchor["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "\\Gx";
  ExpectError("err_regex", anchor, StatusCode::kNotSupported,
              {"pre_tokenizer.pretokenizers[0].pattern.Regex", "\\G"});
  json no_prefix = Tiny();
  no_prefix["pre_tokenizer"]["pretokenizers"][1].erase("add_prefix_space");
  ExpectError("err_prefix", no_prefix, StatusCode::kInvalidArgument,
              {"pre_tokenizer.pretokenizers[1].add_prefix_space"});
  json none = Tiny();
  none["pre_tokenizer"] = nullptr;
  ExpectError("err_nopre", none, StatusCode::kNotSupported, {"pre_tokenizer"});
}

TEST(LoadErrors, UnsupportedNormalizerDecoderPostProcessor) {
  json norm = Tiny();
  norm["normalizer"] = {{"type", "Sequence"},
                        {"normalizers", {{{"type", "NFC"}}, {{"type", "Lowercase"}}}}};
  ExpectError("err_norm", norm, StatusCode::kNotSupported,
              {"normalizer.normalizers[1].type", "Lowercase"});
  json dec = Tiny();
  dec["decoder"] = {{"type", "Metaspace"}};
  ExpectError("err_dec", dec, StatusCode::kNotSupported, {"decoder.type", "Metaspace"});
  json post = Tiny();
  post["post_processor"] = {{"type", "BertProcessing"}};
  ExpectError("err_post", post, StatusCode::kNotSupported, {"post_processor.type", "Bert"});
}

TEST(LoadErrors, WrongValuesNameTheirEntry) {
  json merge = Tiny();
  merge["model"]["merges"].push_back(json::array({"a", "zz"}));
  ExpectError("err_merge", merge, StatusCode::kInvalidArgument, {"model.merges[1]", "zz"});
  json form = Tiny();
  form["model"]["merges"][0] = "a b c";
  ExpectError("err_merge_form", form, StatusCode::kInvalidArgument, {"model.merges[0]"});
  json id = Tiny();
  id["model"]["vocab"]["xyz"] = "seven";
  ExpectError("err_vocab", id, StatusCode::kInvalidArgument, {"model.vocab[\"xyz\"]"});
  json twice = Tiny();
  twice["added_tokens"] = {testing::AddedToken(300, "<a>", true),
                           testing::AddedToken(300, "<b>", true)};
  ExpectError("err_added", twice, StatusCode::kInvalidArgument, {"added_tokens[1].id"});
  json flag = Tiny();
  flag["added_tokens"] = {testing::AddedToken(300, "<a>", true)};
  flag["added_tokens"][0]["lstrip"] = "yes";
  ExpectError("err_flag", flag, StatusCode::kInvalidArgument, {"added_tokens[0].lstrip"});
}

TEST(LoadErrors, ATokenizerJsonFileLoadsDirectly) {
  const std::string dir = testing::WriteCheckpoint("file_path", Tiny());
  auto t = testing::MustLoad(dir + "/tokenizer.json");
  EXPECT_EQ(testing::MustEncode(*t, "ab"), (std::vector<int32_t>{256}));
  EXPECT_FALSE(BpeTokenizer::Load(dir + "/nope.json").ok());
}

}  // namespace
}  // namespace switchyard::tokenizer
