// Macros and {% call %} blocks as callable values (internal to chat_template).
//
// A MacroFunction renders its body in a new scope under the scope it was defined in, with
// its parameters bound from positional then keyword arguments, defaults evaluated after
// every name is bound (so a default may read an earlier parameter). Extra positional
// arguments are an error unless the body reads `varargs`, extra keyword arguments unless
// it reads `kwargs`; `caller` is the body of the {% call %} block that called it. A
// CallerFunction is that body: caller(...) renders it with the block's own parameters.
// Calls nest at most InterpreterLimits::max_call_depth deep. Used by one render at a time.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "chat_template/internal/interpreter.h"

namespace switchyard::chat_template::internal {

class MacroFunction final : public Callable {
 public:
  MacroFunction(const Node* node, ScopePtr scope) : node_(node), scope_(std::move(scope)) {}
  Value Call(Interpreter& in, std::vector<Value> args, const Node& site,
             const Value* caller) const override;

 private:
  const Node* node_;  // kMacro
  ScopePtr scope_;
};

class CallerFunction final : public Callable {
 public:
  CallerFunction(const Node* node, ScopePtr scope) : node_(node), scope_(std::move(scope)) {}
  Value Call(Interpreter& in, std::vector<Value> args, const Node& site,
             const Value* caller) const override;

 private:
  const Node* node_;  // kCallBlock
  ScopePtr scope_;
};

}  // namespace switchyard::chat_template::internal
