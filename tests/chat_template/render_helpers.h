// Test helpers for chat_template: render a template text with a context and get the text
// (failing the test on error) or the error message.
//
// When SY_CHAT_TEMPLATE_CASES names a file, every case is also appended to it as a JSON
// line {"kind", "template", "context", "text", "now_ms"}; the parity test
// (tests/node/chat_template_parity_test.mjs) renders each with @huggingface/jinja and
// checks that it gives the same text ("render"), or that it refuses an extension
// ("extension") or a template both engines reject ("error").
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <string_view>

#include "chat_template/template.h"

namespace switchyard::chat_template::testing {

inline void RecordCase(std::string_view kind, std::string_view text, const Json& context,
                       const std::string& result, const RenderOptions& options) {
  const char* path = std::getenv("SY_CHAT_TEMPLATE_CASES");
  if (path == nullptr || *path == '\0') return;
  Json line = {{"kind", kind}, {"template", text}, {"context", context}, {"text", result}};
  if (options.clock != nullptr) line["now_ms"] = options.clock->Now().millis();
  std::ofstream(path, std::ios::app)
      << line.dump(-1, ' ', false, Json::error_handler_t::replace) << '\n';
}

inline std::string RenderAs(std::string_view kind, std::string_view text, const Json& context,
                            const RenderOptions& options, const Limits& limits) {
  auto t = Template::Parse(text, "chat_template", limits);
  if (!t.ok()) {
    ADD_FAILURE() << "parse: " << t.status().ToString() << "\n  template: " << text;
    return "<parse error>";
  }
  auto out = t->Render(context, options);
  if (!out.ok()) {
    ADD_FAILURE() << "render: " << out.status().ToString() << "\n  template: " << text;
    return "<render error>";
  }
  RecordCase(kind, text, context, *out, options);
  return *out;
}

// Renders a template that @huggingface/jinja renders the same way.
inline std::string Render(std::string_view text, const Json& context = Json::object(),
                          const RenderOptions& options = {}, const Limits& limits = {}) {
  return RenderAs("render", text, context, options, limits);
}

// Renders a template that uses an extension (something @huggingface/jinja refuses).
inline std::string RenderExt(std::string_view text, const Json& context = Json::object()) {
  return RenderAs("extension", text, context, {}, {});
}

// The error message of parsing or rendering, or "" (and a failure) when both succeed.
// `shared`: @huggingface/jinja refuses the template too (false for this engine's limits).
inline std::string ErrorOf(std::string_view text, const Json& context, const Limits& limits,
                           bool shared) {
  auto t = Template::Parse(text, "chat_template", limits);
  std::string message;
  if (!t.ok()) {
    EXPECT_TRUE(t.status().IsInvalidArgument()) << t.status().ToString();
    message = t.status().message();
  } else {
    auto out = t->Render(context);
    if (out.ok()) {
      ADD_FAILURE() << "expected an error, rendered: " << *out << "\n  template: " << text;
      return "";
    }
    EXPECT_TRUE(out.status().IsInvalidArgument()) << out.status().ToString();
    message = out.status().message();
  }
  if (shared) RecordCase("error", text, context, message, {});
  return message;
}

inline std::string Error(std::string_view text, const Json& context = Json::object()) {
  return ErrorOf(text, context, {}, /*shared=*/true);
}

inline std::string LimitError(std::string_view text, const Limits& limits,
                              const Json& context = Json::object()) {
  return ErrorOf(text, context, limits, /*shared=*/false);
}

}  // namespace switchyard::chat_template::testing
