// Template: a Hugging Face chat template, parsed once and rendered many times.
//
// Renders the Jinja subset that Hugging Face chat templates use (Qwen, Llama 3, SmolLM,
// Mistral, Hermes, DeepSeek styles) byte for byte as @huggingface/jinja 0.5.13 does, with
// the Hugging Face defaults trim_blocks and lstrip_blocks; chat_template/README.md lists
// what is supported, the few extensions, and what is refused. A context is a JSON object;
// its keys become the template's variables (messages, tools, add_generation_prompt,
// bos_token, ...). JSON object key order is kept (nlohmann::ordered_json), so tojson
// writes keys in the order they were given.
//
// Errors: Parse and Render return Status::InvalidArgument naming the template, the line
// and column, and what is wrong ("chat_template line 12, column 8: unknown filter
// 'frobnicate'"); a raise_exception("...") message passes through after the position. No
// input crashes or hangs: Limits bounds nesting, macro recursion, work and output size.
//
// Thread-safety: a Template is immutable after Parse; Render may be called from several
// threads at once (each render has its own state). Copies share the parsed tree.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "base/result.h"

namespace switchyard::chat_template {

using Json = nlohmann::ordered_json;

namespace internal {
struct Node;
}

// Bounds on what one template may cost; exceeding one is an InvalidArgument error.
struct Limits {
  size_t max_template_bytes = 1 << 20;  // the template source
  int max_parse_depth = 200;            // nesting of blocks, parentheses and operators
  size_t max_output_bytes = 16 << 20;   // the rendered text, and any one string value
  // Evaluation steps of one render: one per expression, loop iteration and call, plus one
  // per 64 bytes of text built and one per list item. 5M steps take well under a second
  // and bound what a render allocates.
  size_t max_steps = 5'000'000;
  int max_call_depth = 64;    // macros calling macros (recursion included)
  int max_eval_depth = 1000;  // nested evaluation (bounds the C++ stack: ~1 MiB)
};

struct RenderOptions {
  // strftime_now() reads this clock, in UTC; nullptr: RealClock::Default().
  const Clock* clock = nullptr;
};

class Template {
 public:
  // Parses `source`. `name` prefixes every error message.
  static Result<Template> Parse(std::string_view source, std::string name = "chat_template",
                                Limits limits = {});

  // Renders with `context`, which must be a JSON object (or null for no variables).
  Result<std::string> Render(const Json& context, const RenderOptions& options = {}) const;

  const std::string& name() const;

 private:
  struct Parsed;
  explicit Template(std::shared_ptr<const Parsed> parsed) : parsed_(std::move(parsed)) {}
  std::shared_ptr<const Parsed> parsed_;
};

}  // namespace switchyard::chat_template
