// Template: parse once, render many times. See template.h.
#include "chat_template/template.h"

#include <exception>
#include <new>
#include <vector>

#include "chat_template/internal/ast.h"
#include "chat_template/internal/error.h"
#include "chat_template/internal/interpreter.h"
#include "chat_template/internal/lexer.h"
#include "chat_template/internal/parser.h"

namespace switchyard::chat_template {

struct Template::Parsed {
  std::string name;
  Limits limits;
  std::vector<internal::NodePtr> program;
};

namespace {

Status ToStatus(const std::string& name, const internal::TemplateError& e) {
  std::string where = name;
  if (e.pos.line > 0) {
    where += " line " + std::to_string(e.pos.line) + ", column " + std::to_string(e.pos.column);
  }
  return Status::InvalidArgument(where + ": " + e.message);
}

}  // namespace

Result<Template> Template::Parse(std::string_view source, std::string name, Limits limits) {
  if (source.size() > limits.max_template_bytes) {
    return Status::InvalidArgument(name + ": the template is " + std::to_string(source.size()) +
                                   " bytes, more than the limit of " +
                                   std::to_string(limits.max_template_bytes));
  }
  try {
    auto parsed = std::make_shared<Parsed>();
    parsed->name = name;
    parsed->limits = limits;
    parsed->program = internal::Parse(internal::Tokenize(source), limits.max_parse_depth);
    return Template(std::move(parsed));
  } catch (const internal::TemplateError& e) {
    return ToStatus(name, e);
  } catch (const std::bad_alloc&) {
    return Status::ResourceExhausted(name + ": out of memory while parsing");
  } catch (const std::exception& e) {
    return Status::Internal(name + ": " + e.what());
  }
}

Result<std::string> Template::Render(const Json& context, const RenderOptions& options) const {
  const Parsed& p = *parsed_;
  if (!context.is_object() && !context.is_null()) {
    return Status::InvalidArgument(p.name + ": the render context must be a JSON object");
  }
  internal::InterpreterLimits limits;
  limits.max_output_bytes = p.limits.max_output_bytes;
  limits.max_steps = p.limits.max_steps;
  limits.max_call_depth = p.limits.max_call_depth;
  limits.max_eval_depth = p.limits.max_eval_depth;
  try {
    internal::Interpreter interpreter(limits, options.clock);
    return interpreter.Run(p.program, context.is_null() ? Json::object() : context);
  } catch (const internal::TemplateError& e) {
    return ToStatus(p.name, e);
  } catch (const std::bad_alloc&) {
    return Status::ResourceExhausted(p.name + ": out of memory while rendering");
  } catch (const std::exception& e) {
    return Status::Internal(p.name + ": " + e.what());
  }
}

const std::string& Template::name() const { return parsed_->name; }

}  // namespace switchyard::chat_template
