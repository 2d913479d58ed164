// The syntax tree of a parsed template (internal to chat_template).
//
// One Node type for statements and expressions; which fields are used depends on the kind
// (listed beside each kind). A tree is built once by the parser and then only read, so a
// parsed template may be rendered from several threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "chat_template/internal/error.h"

namespace switchyard::chat_template::internal {

enum class NodeKind : uint8_t {
  // Statements.
  kText,         // str: literal output
  kComment,      // nothing
  kOutput,       // a: the expression of {{ }}
  kIf,           // a: test; body; alt (an elif is a single kIf in alt)
  kFor,          // a: loop target (kIdent or kTuple); b: iterable; c: filter test or null;
                 // body; alt: the else block
  kSet,          // a: target; b: value, or null for a block set with body
  kMacro,        // str: name; args: parameters (kIdent or kKwarg); body; special
  kCallBlock,    // a: the macro call (kCall); args: caller parameters; body; special
  kFilterBlock,  // a: the filter (kIdent or kCall); body
  kBreak,
  kContinue,
  // Expressions.
  kIdent,     // str
  kInt,       // number
  kFloat,     // number
  kString,    // str
  kList,      // args
  kTuple,     // args
  kDict,      // args: key, value, key, value, ...
  kBinary,    // str: operator; a, b
  kUnary,     // str: "not", "-", "+"; a
  kFilter,    // a: operand; b: the filter (kIdent, or kCall whose a is a kIdent)
  kTest,      // a: operand; str: test name; flag: negated; args: test arguments
  kSelect,    // a: value; b: condition ("a if b" without else)
  kTernary,   // a: condition; b: if true; c: if false
  kMember,    // a: object; b: property (kIdent/kInt for ".x", any expression or kSlice for
              // "[x]"); flag: computed ("[x]")
  kSlice,     // a, b, c: start, stop, step (each may be null)
  kCall,      // a: callee; args
  kKwarg,     // str: name; a: value
  kSpread,    // a: *args
  kKwSpread,  // a: **kwargs
};

// Which special names a macro or call block reads (caller, kwargs, varargs).
enum SpecialArg : uint8_t { kUsesCaller = 1, kUsesKwargs = 2, kUsesVarargs = 4 };

struct Node;
using NodePtr = std::unique_ptr<Node>;

struct Node {
  NodeKind kind;
  Pos pos;
  std::string str;
  double number = 0;
  bool flag = false;
  uint8_t special = 0;
  NodePtr a, b, c;
  std::vector<NodePtr> args;
  std::vector<NodePtr> body;
  std::vector<NodePtr> alt;
};

inline NodePtr MakeNode(NodeKind kind, Pos pos) {
  auto n = std::make_unique<Node>();
  n->kind = kind;
  n->pos = pos;
  return n;
}

}  // namespace switchyard::chat_template::internal
