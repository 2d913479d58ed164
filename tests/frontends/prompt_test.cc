// PromptFormat: the plain format for a model without a chat template, a checkpoint's own
// template rendered with the conversation in Hugging Face's shape (roles, tool calls with
// their arguments as objects, tool results, tools), the tool-call family from the template
// or the model type, a forced call opened in the family's syntax, and template errors.
#include "frontends/prompt.h"

#include <gtest/gtest.h>

#include <string>

#include "frontends/openai/openai_prompt.h"

namespace switchyard::frontends {
namespace {

// A ChatML template in the style of Qwen's: tools in the system turn, calls in <tool_call>
// tags, tool results as user turns (trim_blocks drops the newline after each block tag).
constexpr char kChatMl[] = R"({%- if tools %}<|im_start|>system
{% if messages[0].role == 'system' %}{{ messages[0].content }}

{% endif %}# Tools
<tools>{% for tool in tools %}
{{ tool | tojson }}{% endfor %}
</tools>
For each call write <tool_call>{"name": ..., "arguments": ...}</tool_call><|im_end|>
{% elif messages[0].role == 'system' %}<|im_start|>system
{{ messages[0].content }}<|im_end|>
{% endif %}
{%- for m in messages %}
{%- if m.role == 'system' %}{% if not loop.first %}{{ raise_exception('system must be first') }}{% endif %}
{%- elif m.role == 'tool' %}<|im_start|>user
<tool_response>
{{ m.content }}
</tool_response><|im_end|>
{% elif m.role == 'assistant' %}<|im_start|>assistant
{% if m.content %}{{ m.content }}{% endif %}
{%- for c in m.tool_calls %}<tool_call>
{"name": "{{ c.function.name }}", "arguments": {{ c.function.arguments | tojson }}}
</tool_call>{% endfor %}<|im_end|>
{% else %}<|im_start|>{{ m.role }}
{{ m.content }}<|im_end|>
{% endif %}
{%- endfor %}
{%- if add_generation_prompt %}<|im_start|>assistant
{% endif %})";

Conversation ToolConversation() {
  Conversation c;
  c.messages.push_back(Message{.role = "developer", .content = "Be brief."});
  c.messages.push_back(Message{.role = "user", .content = "List files."});
  c.messages.push_back(
      Message{.role = "assistant", .tool_calls = {ToolCall{"call_1", "bash", R"({"cmd": "ls"})"}}});
  c.messages.push_back(Message{.role = "tool", .content = "a.txt", .tool_call_id = "call_1"});
  c.tools.push_back(ToolDef{"bash", "Runs a command",
                            R"({"type": "object", "properties": {"cmd": {"type": "string"}}})"});
  return c;
}

TEST(PromptFormat, WithoutATemplateItIsThePlainFormat) {
  auto f = PromptFormat::Create({});
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_FALSE((*f)->templated());
  EXPECT_EQ((*f)->parser(), nullptr);
  Conversation c = ToolConversation();
  auto text = (*f)->Render(c);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, openai::RenderChat(c.messages, c.tools));
  EXPECT_EQ((*f)->ForcedCallOpening("call_9", "bash"), "<|tool_call|> call_9 bash\n");
}

TEST(PromptFormat, RendersTheConversationThroughTheTemplate) {
  auto f = PromptFormat::Create({.chat_template = kChatMl});
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_TRUE((*f)->templated());
  EXPECT_EQ((*f)->family(), chat_template::ToolCallFamily::kHermes);
  ASSERT_NE((*f)->parser(), nullptr);
  auto text = (*f)->Render(ToolConversation());
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_EQ(*text,
            "<|im_start|>system\nBe brief.\n\n# Tools\n<tools>"
            R"({"type": "function", "function": {"name": "bash", "description": "Runs a command", )"
            R"("parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}}}})"
            "</tools>\nFor each call write <tool_call>{\"name\": ..., \"arguments\": ...}"
            "</tool_call><|im_end|>\n"
            "<|im_start|>user\nList files.<|im_end|>\n"
            "<|im_start|>assistant\n<tool_call>\n{\"name\": \"bash\", \"arguments\": "
            "{\"cmd\": \"ls\"}}\n</tool_call><|im_end|>\n"
            "<|im_start|>user\n<tool_response>\na.txt\n</tool_response><|im_end|>\n"
            "<|im_start|>assistant\n");
  EXPECT_EQ((*f)->ForcedCallOpening("call_2", "bash"),
            "<tool_call>\n{\"name\": \"bash\", \"arguments\": ");
}

TEST(PromptFormat, TheTemplatesContextHoldsBosAndEosTokens) {
  auto f = PromptFormat::Create(
      {.chat_template = "{{ bos_token }}{% for m in messages %}{{ m.content }}{{ eos_token }}"
                        "{% endfor %}",
       .bos_token = "<s>",
       .eos_token = "</s>"});
  ASSERT_TRUE(f.ok());
  Conversation c;
  c.messages.push_back(Message{.role = "user", .content = "hi"});
  EXPECT_EQ(*(*f)->Render(c), "<s>hi</s>");
}

TEST(PromptFormat, TheFamilyComesFromTheModelTypeWhenTheTemplateNamesNone) {
  auto f =
      PromptFormat::Create({.chat_template = "{{ messages[0].content }}", .model_type = "qwen2"});
  ASSERT_TRUE(f.ok());
  EXPECT_EQ((*f)->family(), chat_template::ToolCallFamily::kHermes);
  auto llama = PromptFormat::Create({.chat_template = "x", .model_type = "llama"});
  ASSERT_TRUE(llama.ok());
  EXPECT_EQ((*llama)->family(), chat_template::ToolCallFamily::kLlama3Json);
  EXPECT_EQ((*llama)->ForcedCallOpening("id", "get_weather"),
            "{\"name\": \"get_weather\", \"parameters\": ");
  auto none = PromptFormat::Create({.chat_template = "x", .model_type = "gpt2"});
  ASSERT_TRUE(none.ok());
  EXPECT_EQ((*none)->parser(), nullptr);
}

TEST(PromptFormat, TemplateErrorsNameTheTemplateAndLine) {
  auto bad = PromptFormat::Create({.chat_template = "{% for m in messages %}"});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("chat_template"), std::string::npos)
      << bad.status().ToString();
  auto f = PromptFormat::Create({.chat_template = kChatMl});
  ASSERT_TRUE(f.ok());
  Conversation c = ToolConversation();
  c.messages.push_back(Message{.role = "system", .content = "late"});
  auto r = (*f)->Render(c);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsInvalidArgument());
  EXPECT_NE(r.status().message().find("system must be first"), std::string::npos);
}

TEST(PromptFormat, ToolsWithoutJsonParametersLeaveThemOut) {
  Conversation c;
  c.tools.push_back(ToolDef{"f", "", "not json"});
  chat_template::Json t = TemplateTools(c);
  ASSERT_EQ(t.size(), 1u);
  EXPECT_FALSE(t[0]["function"].contains("parameters"));
  EXPECT_EQ(t[0]["function"]["name"], "f");
}

}  // namespace
}  // namespace switchyard::frontends
