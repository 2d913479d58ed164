// The parser of the Jinja subset, expressions: see parser.h.
#include <charconv>
#include <set>

#include "chat_template/internal/js_number.h"
#include "chat_template/internal/parser_impl.h"

namespace switchyard::chat_template::internal {
namespace {

NodePtr Binary(const Token& op, NodePtr left, NodePtr right) {
  NodePtr n = MakeNode(NodeKind::kBinary, op.pos);
  n->str = op.value;
  n->a = std::move(left);
  n->b = std::move(right);
  return n;
}

bool IsKeyword(std::string_view s) {
  return s == "and" || s == "or" || s == "not" || s == "if" || s == "else" || s == "in" ||
         s == "is";
}

}  // namespace

NodePtr Parser::ParseExpression() {
  DepthGuard guard(this);
  return ParseIfExpr();
}

// "a, b, c" as a tuple, or a single expression; `primary` for loop targets.
NodePtr Parser::ParseSequence(bool primary) {
  const Pos pos = Here();
  NodePtr first = primary ? ParsePrimary() : ParseExpression();
  if (!Is(Tok::kComma)) return first;
  NodePtr tuple = MakeNode(NodeKind::kTuple, pos);
  tuple->args.push_back(std::move(first));
  while (true) {
    ++cur_;  // ,
    tuple->args.push_back(primary ? ParsePrimary() : ParseExpression());
    if (!Is(Tok::kComma)) break;
  }
  return tuple;
}

NodePtr Parser::ParseIfExpr() {
  NodePtr value = ParseOr();
  if (!IsIdent("if")) return value;
  const Pos pos = toks()[cur_++].pos;
  NodePtr test = ParseOr();
  if (IsIdent("else")) {
    ++cur_;
    DepthGuard guard(this);
    NodePtr n = MakeNode(NodeKind::kTernary, pos);
    n->a = std::move(test);
    n->b = std::move(value);
    n->c = ParseIfExpr();
    return n;
  }
  NodePtr n = MakeNode(NodeKind::kSelect, pos);
  n->a = std::move(value);
  n->b = std::move(test);
  return n;
}

NodePtr Parser::ParseOr() {
  NodePtr left = ParseAnd();
  while (IsIdent("or")) {
    const Token& op = toks()[cur_++];
    left = Binary(op, std::move(left), ParseAnd());
  }
  return left;
}

NodePtr Parser::ParseAnd() {
  NodePtr left = ParseNot();
  while (IsIdent("and")) {
    const Token& op = toks()[cur_++];
    left = Binary(op, std::move(left), ParseNot());
  }
  return left;
}

// As the reference: each "not" applies to what follows; a second "not" after a complete
// operand replaces the first ("not a not b" is "not b").
NodePtr Parser::ParseNot() {
  NodePtr result;
  while (IsIdent("not")) {
    DepthGuard guard(this);
    NodePtr n = MakeNode(NodeKind::kUnary, toks()[cur_++].pos);
    n->str = "not";
    n->a = ParseNot();
    result = std::move(n);
  }
  return result ? std::move(result) : ParseComparison();
}

NodePtr Parser::ParseComparison() {
  NodePtr left = ParseAdditive();
  while (true) {
    Token op;
    if (IsIdent("not") && IsIdent("in", 1)) {
      op = Token{Tok::kIdent, "not in", toks()[cur_].pos};
      cur_ += 2;
    } else if (IsIdent("in") || Is(Tok::kCompare)) {
      op = toks()[cur_++];
    } else {
      break;
    }
    left = Binary(op, std::move(left), ParseAdditive());
  }
  return left;
}

NodePtr Parser::ParseAdditive() {
  NodePtr left = ParseMultiplicative();
  while (Is(Tok::kAdditive)) {
    const Token& op = toks()[cur_++];
    left = Binary(op, std::move(left), ParseMultiplicative());
  }
  return left;
}

NodePtr Parser::ParseMultiplicative() {
  NodePtr left = ParsePower();
  while (Is(Tok::kMultiplicative)) {
    const Token& op = toks()[cur_++];
    left = Binary(op, std::move(left), ParsePower());
  }
  return left;
}

NodePtr Parser::ParsePower() {
  NodePtr left = ParseTest();
  while (Is(Tok::kPower)) {
    const Token& op = toks()[cur_++];
    left = Binary(op, std::move(left), ParseTest());
  }
  return left;
}

NodePtr Parser::ParseTest() {
  NodePtr operand = ParseFilter();
  while (IsIdent("is")) {
    const Pos pos = toks()[cur_++].pos;
    NodePtr n = MakeNode(NodeKind::kTest, pos);
    n->flag = IsIdent("not");
    if (n->flag) ++cur_;
    NodePtr name = ParsePrimary();
    if (name->kind != NodeKind::kIdent) Fail(name->pos, "expected the name of a test after 'is'");
    n->str = name->str;
    n->a = std::move(operand);
    ParseTestArgument(n.get());
    operand = std::move(n);
  }
  return operand;
}

// An extension (the reference has no test arguments): the tests that compare with a value
// take one, as "x is eq 3", "x is divisibleby(3)".
void Parser::ParseTestArgument(Node* test) {
  static const std::set<std::string_view> kWithArgument = {
      "equalto", "eq", "ne", "lt", "le", "gt", "ge", "sameas", "divisibleby"};
  if (!kWithArgument.contains(test->str) || AtEnd()) return;
  const Token& t = toks()[cur_];
  const bool starts_operand = t.type == Tok::kNumber || t.type == Tok::kString ||
                              t.type == Tok::kLParen || t.type == Tok::kLBracket ||
                              t.type == Tok::kLBrace ||
                              (t.type == Tok::kIdent && !IsKeyword(t.value));
  if (starts_operand) test->args.push_back(ParseCallMember());
}

NodePtr Parser::ParseFilter() {
  NodePtr operand = ParseUnarySign();
  while (Is(Tok::kPipe)) {
    const Pos pos = toks()[cur_++].pos;
    NodePtr filter = ParsePrimary();
    if (filter->kind != NodeKind::kIdent) Fail(filter->pos, "expected a filter name after '|'");
    if (Is(Tok::kLParen)) filter = ParseCall(std::move(filter));  // f(...).x is refused when run
    NodePtr n = MakeNode(NodeKind::kFilter, pos);
    n->a = std::move(operand);
    n->b = std::move(filter);
    operand = std::move(n);
  }
  return operand;
}

NodePtr Parser::ParseUnarySign() {
  if ((Is(Tok::kUnary) || Is(Tok::kAdditive)) &&
      (toks()[cur_].value == "-" || toks()[cur_].value == "+")) {
    DepthGuard guard(this);
    const Token& op = toks()[cur_++];
    NodePtr n = MakeNode(NodeKind::kUnary, op.pos);
    n->str = op.value;
    n->a = ParseUnarySign();
    return n;
  }
  return ParseCallMember();
}

NodePtr Parser::ParseCallMember() {
  NodePtr member = ParseMember(ParsePrimary());
  if (Is(Tok::kLParen)) return ParseCall(std::move(member));
  return member;
}

NodePtr Parser::ParseCall(NodePtr callee) {
  DepthGuard guard(this);
  NodePtr n = MakeNode(NodeKind::kCall, callee->pos);
  n->args = ParseArgs(/*parameters=*/false);
  n->a = std::move(callee);
  n = ParseMember(std::move(n));
  if (Is(Tok::kLParen)) n = ParseCall(std::move(n));
  return n;
}

std::vector<NodePtr> Parser::ParseArgs(bool parameters) {
  Expect(Tok::kLParen, "'('");
  std::vector<NodePtr> args;
  ParseArgList(parameters, &args);
  Expect(Tok::kRParen, "')'");
  return args;
}

}  // namespace switchyard::chat_template::internal
