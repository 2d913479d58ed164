// A builtin function as a callable value (internal to chat_template): a C++ function of
// the interpreter, the arguments (the reference's convention: positional, then one kKwargs
// value) and the call site (for error positions). Used by one render at a time.
#pragma once

#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "chat_template/internal/interpreter.h"

namespace switchyard::chat_template::internal {

class Builtin final : public Callable {
 public:
  using Fn = std::function<Value(Interpreter&, std::vector<Value>&, const Node&)>;
  explicit Builtin(Fn fn) : fn_(std::move(fn)) {}
  Value Call(Interpreter& in, std::vector<Value> args, const Node& site,
             const Value* /*caller*/) const override {
    return fn_(in, args, site);
  }

 private:
  Fn fn_;
};

inline Value MakeBuiltin(Builtin::Fn fn) {
  return Value::Function(std::make_shared<Builtin>(std::move(fn)));
}

// The argument at i, or undefined.
inline Value ArgAt(const std::vector<Value>& args, size_t i) {
  return i < args.size() ? args[i] : Value();
}

}  // namespace switchyard::chat_template::internal
