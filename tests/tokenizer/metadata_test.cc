// TokenizerMetadata (tokenizer/metadata.h): tokenizer_config.json, generation_config.json
// and chat_template.jinja beside tokenizer.json, and their errors naming file and key.
#include "tokenizer/metadata.h"

#include <gtest/gtest.h>

#include <string>

#include "test_vocab.h"

namespace switchyard::tokenizer {
namespace {

using testing::json;

json WithSpecials() {
  json j = testing::TinyTokenizer({});
  j["added_tokens"] = {
      testing::AddedToken(256, "<s>", true), testing::AddedToken(257, "</s>", true),
      testing::AddedToken(258, "<eot>", true), testing::AddedToken(259, "<pad>", true)};
  return j;
}

std::string Checkpoint(const std::string& name, const json& config, const json& generation = {},
                       const std::string& jinja = "") {
  std::vector<std::pair<std::string, std::string>> files;
  if (!config.is_null()) files.emplace_back("tokenizer_config.json", config.dump());
  if (!generation.is_null()) files.emplace_back("generation_config.json", generation.dump());
  if (!jinja.empty()) files.emplace_back("chat_template.jinja", jinja);
  return testing::WriteCheckpoint(name, WithSpecials(), files);
}

TEST(Metadata, DefaultsWithoutConfigFiles) {
  auto t = testing::MustLoad(Checkpoint("md_none", json()));
  const TokenizerMetadata& md = t->metadata();
  EXPECT_EQ(md.bos_id, -1);
  EXPECT_TRUE(md.eos_ids.empty());
  EXPECT_EQ(md.pad_id, -1);
  EXPECT_FALSE(md.add_bos_token);
  EXPECT_EQ(md.chat_template, "");
  EXPECT_EQ(md.vocab_size, 260);
  ASSERT_EQ(md.added_tokens.size(), 4u);
  EXPECT_EQ(md.added_tokens[1].content, "</s>");
  EXPECT_TRUE(md.added_tokens[1].special);
}

TEST(Metadata, TokenizerAndGenerationConfig) {
  const json config = {{"bos_token", {{"content", "<s>"}, {"lstrip", false}}},
                       {"eos_token", "</s>"},
                       {"pad_token", nullptr},
                       {"add_bos_token", true},
                       {"chat_template", "{{ messages }}"},
                       {"model_max_length", 4096},
                       {"clean_up_tokenization_spaces", true}};
  const json generation = {
      {"eos_token_id", {258, 257}}, {"bos_token_id", 1}, {"pad_token_id", 259}};
  auto t = testing::MustLoad(Checkpoint("md_full", config, generation));
  const TokenizerMetadata& md = t->metadata();
  EXPECT_EQ(md.bos_id, 256);  // the tokenizer config's, not generation_config's
  EXPECT_EQ(md.eos_ids, (std::vector<int32_t>{257, 258}));
  EXPECT_TRUE(md.IsEos(258));
  EXPECT_EQ(md.pad_id, 259);  // none in the tokenizer config
  EXPECT_TRUE(md.add_bos_token);
  EXPECT_EQ(md.chat_template, "{{ messages }}");
  EXPECT_EQ(md.model_max_length, 4096);
  EXPECT_TRUE(md.clean_up_tokenization_spaces);
  EXPECT_EQ(md.AddedTokenId("<eot>"), 258);
}

TEST(Metadata, ChatTemplateListAndJinjaFile) {
  const json list = {
      {"chat_template",
       {{{"name", "default"}, {"template", "D"}}, {{"name", "tool_use"}, {"template", "T"}}}},
      {"model_max_length", 1e30}};
  auto t = testing::MustLoad(Checkpoint("md_list", list));
  EXPECT_EQ(t->metadata().chat_template, "D");
  EXPECT_EQ(t->metadata().named_chat_templates.at("tool_use"), "T");
  EXPECT_EQ(t->metadata().model_max_length, 0);  // HF's "no limit"
  auto j = testing::MustLoad(Checkpoint("md_jinja", list, json(), "{% for m in messages %}"));
  EXPECT_EQ(j->metadata().chat_template, "{% for m in messages %}");
}

TEST(Metadata, AddBosFollowsThePostProcessorTemplate) {
  json j = WithSpecials();
  j["post_processor"] = {{"type", "Sequence"},
                         {"processors",
                          {{{"type", "ByteLevel"}},
                           {{"type", "TemplateProcessing"},
                            {"single",
                             {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
                              {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}}}}}};
  const std::string dir = testing::WriteCheckpoint(
      "md_template", j, {{"tokenizer_config.json", json({{"bos_token", "<s>"}}).dump()}});
  auto t = testing::MustLoad(dir);
  EXPECT_TRUE(t->metadata().add_bos_token);
  EXPECT_EQ(testing::MustEncode(*t, "a"), (std::vector<int32_t>{'a'}));  // Encode adds none
}

TEST(Metadata, AdditionalSpecialTokensAreSkippedWhenDecoding) {
  json j = WithSpecials();
  j["added_tokens"].push_back(testing::AddedToken(260, "<tool>", false));
  const std::string dir = testing::WriteCheckpoint(
      "md_additional", j,
      {{"tokenizer_config.json", json({{"additional_special_tokens", {"<tool>"}}}).dump()}});
  auto t = testing::MustLoad(dir);
  EXPECT_TRUE(t->IsSpecial(260));
  DecodeOptions skip;
  skip.skip_special_tokens = true;
  EXPECT_EQ(t->Decode(std::vector<int32_t>{260, 'x', 256}, skip), "x");
}

// Loading fails with `code`, naming `file` of the checkpoint and each of `parts`.
void ExpectErrorInFile(const std::string& dir, const std::string& file, StatusCode code,
                       std::initializer_list<std::string> parts) {
  auto t = BpeTokenizer::Load(dir);
  ASSERT_FALSE(t.ok()) << dir;
  EXPECT_EQ(t.status().code(), code) << t.status();
  EXPECT_NE(t.status().message().find(dir + "/" + file), std::string::npos) << t.status();
  for (const auto& p : parts)
    EXPECT_NE(t.status().message().find(p), std::string::npos) << t.status();
}

TEST(Metadata, ErrorsNameTheFileAndKey) {
  const std::string bad_json = Checkpoint("md_bad", json());
  testing::WriteFile(bad_json + "/tokenizer_config.json", "{\"bos_token\": ");
  ExpectErrorInFile(bad_json, "tokenizer_config.json", StatusCode::kInvalidArgument,
                    {"not valid JSON"});
  ExpectErrorInFile(Checkpoint("md_unknown", {{"eos_token", "<nope>"}}), "tokenizer_config.json",
                    StatusCode::kInvalidArgument, {"eos_token", "<nope>"});
  ExpectErrorInFile(Checkpoint("md_type", {{"pad_token", 7}}), "tokenizer_config.json",
                    StatusCode::kInvalidArgument, {"pad_token"});
  ExpectErrorInFile(Checkpoint("md_template_type", {{"chat_template", 3}}), "tokenizer_config.json",
                    StatusCode::kInvalidArgument, {"chat_template"});
  ExpectErrorInFile(Checkpoint("md_space", {{"remove_space", true}}), "tokenizer_config.json",
                    StatusCode::kNotSupported, {"remove_space"});
  ExpectErrorInFile(Checkpoint("md_gen_range", json::object(), {{"eos_token_id", {257, 999}}}),
                    "generation_config.json", StatusCode::kInvalidArgument,
                    {"eos_token_id[1]", "999"});
  const std::string gen_bad = Checkpoint("md_gen_bad", json::object());
  testing::WriteFile(gen_bad + "/generation_config.json", "[1,");
  ExpectErrorInFile(gen_bad, "generation_config.json", StatusCode::kInvalidArgument,
                    {"not valid JSON"});
  ExpectErrorInFile(Checkpoint("md_jinja_bad", json(), json(), "ok \xff"), "chat_template.jinja",
                    StatusCode::kInvalidArgument, {"not UTF-8"});
}

}  // namespace
}  // namespace switchyard::tokenizer
