// sy_render_template: renders chat templates with switchyard::chat_template, for the
// parity test against @huggingface/jinja (tests/node/chat_template_parity_test.mjs).
//
//   sy_render_template [--now-ms MS] TEMPLATE_FILE < context.json
//       prints the rendered text; on error prints the error to stderr and exits 1.
//   sy_render_template [--now-ms MS] --batch < cases.jsonl
//       one JSON object per input line, {"template": TEXT, "context": {...}}; writes one
//       line per case: {"ok": true, "text": ...} or {"ok": false, "error": ...}.
//
// --now-ms fixes the clock strftime_now reads (milliseconds since the Unix epoch, UTC).
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "base/clock.h"
#include "chat_template/template.h"

namespace {

using switchyard::chat_template::Json;
using switchyard::chat_template::RenderOptions;
using switchyard::chat_template::Template;

Json RenderCase(const std::string& text, const Json& context, const RenderOptions& options) {
  auto parsed = Template::Parse(text);
  if (!parsed.ok()) return Json{{"ok", false}, {"error", parsed.status().message()}};
  auto out = parsed->Render(context, options);
  if (!out.ok()) return Json{{"ok", false}, {"error", out.status().message()}};
  return Json{{"ok", true}, {"text", *out}};
}

int Batch(const RenderOptions& options) {
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.empty()) continue;
    const Json c = Json::parse(line, nullptr, /*allow_exceptions=*/false);
    Json result;
    if (c.is_discarded() || !c.contains("template") || !c["template"].is_string()) {
      result = Json{{"ok", false}, {"error", "bad case line"}};
    } else {
      result =
          RenderCase(c["template"].get<std::string>(), c.value("context", Json::object()), options);
    }
    std::cout << result.dump(-1, ' ', false, Json::error_handler_t::replace) << '\n';
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  switchyard::ManualClock clock;
  RenderOptions options;
  bool batch = false;
  std::string file;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--now-ms" && i + 1 < argc) {
      clock.Set(switchyard::Time::FromMillis(std::stoll(argv[++i])));
      options.clock = &clock;
    } else if (arg == "--batch") {
      batch = true;
    } else {
      file = arg;
    }
  }
  if (batch) return Batch(options);
  if (file.empty()) {
    std::fprintf(stderr, "usage: sy_render_template [--now-ms MS] (TEMPLATE_FILE | --batch)\n");
    return 2;
  }
  std::ifstream in(file, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  std::stringstream ctx;
  ctx << std::cin.rdbuf();
  const Json context = Json::parse(ctx.str(), nullptr, false);
  if (context.is_discarded()) {
    std::fprintf(stderr, "the context is not JSON\n");
    return 2;
  }
  const Json r = RenderCase(text.str(), context, options);
  if (!r["ok"].get<bool>()) {
    std::fprintf(stderr, "%s\n", r["error"].get<std::string>().c_str());
    return 1;
  }
  std::fwrite(r["text"].get_ref<const std::string&>().data(), 1,
              r["text"].get_ref<const std::string&>().size(), stdout);
  return 0;
}
