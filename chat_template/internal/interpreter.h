// The evaluator of a parsed template (internal to chat_template).
//
// An Interpreter renders one template once: it holds the scopes, the step budget and the
// limits of that render. Semantics follow @huggingface/jinja: a for loop and a macro call
// open a scope (a set inside them does not change the outer variable), if blocks do not;
// macros close over the scope they are defined in; break and continue drop the output of
// the current iteration. Errors throw TemplateError with the position of the innermost node
// being evaluated. One Interpreter per render; not thread-safe. The parsed tree is only read.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "chat_template/internal/ast.h"
#include "chat_template/internal/value.h"

namespace switchyard::chat_template::internal {

class Interpreter;

// A variable scope; lookups walk up to the parent.
struct Scope {
  explicit Scope(std::shared_ptr<Scope> p) : parent(std::move(p)) {}
  const Value* Lookup(const std::string& name) const;
  void Set(const std::string& name, Value v) { vars[name] = std::move(v); }

  std::shared_ptr<Scope> parent;
  std::unordered_map<std::string, Value> vars;
};
using ScopePtr = std::shared_ptr<Scope>;

// Anything a template can call: macros, caller(), builtins, bound string and dict methods.
class Callable {
 public:
  virtual ~Callable() = default;
  // args: the positional arguments, then one kKwargs value when keyword arguments were
  // given (the reference's calling convention). caller: the body of the {% call %} block
  // this call comes from, or null.
  virtual Value Call(Interpreter& in, std::vector<Value> args, const Node& site,
                     const Value* caller) const = 0;
};

struct InterpreterLimits {
  size_t max_output_bytes = 16 << 20;
  size_t max_steps = 20'000'000;
  int max_call_depth = 64;
  int max_eval_depth = 1000;
};

enum class Flow { kNormal, kBreak, kContinue };

class Interpreter {
 public:
  Interpreter(const InterpreterLimits& limits, const Clock* clock)
      : limits_(limits), clock_(clock) {}
  ~Interpreter();
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;

  std::string Run(const std::vector<NodePtr>& program, const nlohmann::ordered_json& context);

  // Statements (interpreter.cc).
  Flow RenderBlock(const std::vector<NodePtr>& body, const ScopePtr& scope, std::string* out);
  // Expressions (eval.cc, eval_ops.cc).
  Value Eval(const Node& n, const ScopePtr& scope);
  Value CallValue(const Value& fn, std::vector<Value> args, const Node& site, const Value* caller);
  // Filters (filters.cc, filters_call.cc) and tests (tests.cc).
  Value ApplyFilter(const Value& operand, const Node& filter, const ScopePtr& scope);
  // A filter by name, without arguments (x|name).
  Value IdentifierFilter(const Value& operand, const std::string& name, const Node& site);
  bool RunTest(const std::string& name, const Value& operand, const Value* arg, const Node& site);
  // Dict and string attributes that are methods (methods.cc); undefined when unknown.
  Value DictMethod(const Value& dict, const std::string& name);
  Value StringMember(const Value& str, const std::string& name);

  // For builtins.
  void Charge(size_t steps);
  Value NewString(std::string s, const Node& site);  // checks the size limit
  Value NewList(std::vector<Value> items);
  size_t max_bytes() const { return limits_.max_output_bytes; }
  const Clock* clock() const { return clock_; }
  void Capture(const ScopePtr& scope) { captured_.push_back(scope); }
  void TrackNamespace(std::shared_ptr<ObjectData> ns) { namespaces_.push_back(std::move(ns)); }
  [[noreturn]] void Error(const Node& site, std::string message) const;
  // Counts nested macro calls; the guard throws past the limit.
  class CallGuard {
   public:
    CallGuard(Interpreter* in, const Node& site);
    ~CallGuard() { --in_->call_depth_; }

   private:
    Interpreter* in_;
  };

  std::pair<std::vector<Value>, std::shared_ptr<ObjectData>> EvalArguments(
      const std::vector<NodePtr>& args, const ScopePtr& scope);

 private:
  // Counts nested evaluation; throws past the limit.
  class DepthGuard {
   public:
    DepthGuard(Interpreter* in, const Node& site);
    ~DepthGuard() { --in_->eval_depth_; }

   private:
    Interpreter* in_;
  };

  Flow RenderStatement(const Node& n, const ScopePtr& scope, std::string* out);
  Flow RenderFor(const Node& n, const ScopePtr& scope, std::string* out);
  std::vector<Value> LoopItems(const Node& n, const ScopePtr& scope);
  void BindTarget(const Node& target, const Value& item, Scope* scope);
  Flow ExecuteSet(const Node& n, const ScopePtr& scope);
  void DefineMacro(const Node& n, const ScopePtr& scope);
  Value RenderCallBlock(const Node& n, const ScopePtr& scope);
  void Append(std::string* out, std::string_view text, const Node& site);

  Value EvalNode(const Node& n, const ScopePtr& scope);
  Value EvalMember(const Node& n, const ScopePtr& scope);
  Value EvalSlice(const Value& object, const Node& slice, const ScopePtr& scope);
  Value EvalCall(const Node& n, const ScopePtr& scope);
  std::vector<Value> EvalCallArgs(const std::vector<NodePtr>& args, const ScopePtr& scope);
  Value EvalBinary(const Node& n, const ScopePtr& scope);
  Value EvalArithmetic(const Node& n, const Value& l, const Value& r);
  Value EvalUnary(const Node& n, const ScopePtr& scope);
  Value EvalTest(const Node& n, const ScopePtr& scope);
  Value EvalDict(const Node& n, const ScopePtr& scope);

  Value CallFilter(const Value& operand, const Node& call, const ScopePtr& scope);
  Value ExtensionFilter(const Value& operand, const std::string& name, const Node& site,
                        const std::vector<Value>& args, std::shared_ptr<ObjectData> kwargs);

  const InterpreterLimits limits_;
  const Clock* clock_;
  size_t steps_ = 0;
  int eval_depth_ = 0;
  int call_depth_ = 0;
  // Cleared when the render ends, to break reference cycles: scopes closed over by macros
  // and caller blocks, and namespaces (which may hold themselves).
  std::vector<ScopePtr> captured_;
  std::vector<std::shared_ptr<ObjectData>> namespaces_;
};

// The error for a filter that is unknown, or does not apply to the operand's type.
[[noreturn]] void FilterError(const Interpreter& in, const Value& v, const std::string& name,
                              const Node& site);

// Installs the global functions (range, namespace, raise_exception, strftime_now) and
// constants (true, false, none and their capitalised forms) into a scope.
void InstallGlobals(Scope* scope);

}  // namespace switchyard::chat_template::internal
