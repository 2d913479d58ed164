// The parser of the Jinja subset, statements: see parser.h.
#include "chat_template/internal/parser.h"

#include "chat_template/internal/parser_impl.h"

namespace switchyard::chat_template::internal {

std::vector<NodePtr> Parse(const Lexed& lexed, int max_depth) {
  Parser parser(lexed, max_depth);
  return parser.ParseProgram();
}

Parser::DepthGuard::DepthGuard(Parser* p) : p_(p) {
  if (++p_->depth_ > p_->max_depth_) {
    --p_->depth_;
    p_->ErrorHere("template nests deeper than " + std::to_string(p_->max_depth_) + " levels");
  }
}

bool Parser::Is(Tok t, size_t ahead) const {
  return cur_ + ahead < toks().size() && toks()[cur_ + ahead].type == t;
}

bool Parser::IsIdent(std::string_view name, size_t ahead) const {
  return Is(Tok::kIdent, ahead) && toks()[cur_ + ahead].value == name;
}

bool Parser::IsStatement(std::initializer_list<std::string_view> names) const {
  if (!Is(Tok::kOpenStmt) || !Is(Tok::kIdent, 1)) return false;
  for (std::string_view n : names) {
    if (toks()[cur_ + 1].value == n) return true;
  }
  return false;
}

Pos Parser::Here() const { return AtEnd() ? lexed_.end : toks()[cur_].pos; }

void Parser::ErrorHere(const std::string& msg) const { Fail(Here(), msg); }

std::string Parser::Describe(size_t i) const {
  if (i >= toks().size()) return "end of template";
  const Token& t = toks()[i];
  switch (t.type) {
    case Tok::kIdent:
      return "'" + t.value + "'";
    case Tok::kNumber:
      return "number " + t.value;
    case Tok::kString:
      return "string literal";
    case Tok::kText:
      return "text";
    case Tok::kComment:
      return "comment";
    default:
      return "'" + t.value + "'";
  }
}

const Token& Parser::Next() {
  if (AtEnd()) ErrorHere("unexpected end of template");
  return toks()[cur_++];
}

const Token& Parser::Expect(Tok t, std::string_view what) {
  if (!Is(t)) ErrorHere("expected " + std::string(what) + ", got " + Describe(cur_));
  return toks()[cur_++];
}

void Parser::ExpectIdent(std::string_view name) {
  if (!IsIdent(name)) ErrorHere("expected '" + std::string(name) + "', got " + Describe(cur_));
  ++cur_;
}

std::vector<NodePtr> Parser::ParseProgram() {
  std::vector<NodePtr> body;
  while (!AtEnd()) body.push_back(ParseAny());
  return body;
}

NodePtr Parser::ParseAny() {
  DepthGuard guard(this);
  const Token& t = toks()[cur_];
  switch (t.type) {
    case Tok::kComment: {
      ++cur_;
      return MakeNode(NodeKind::kComment, t.pos);
    }
    case Tok::kText: {
      ++cur_;
      NodePtr n = MakeNode(NodeKind::kText, t.pos);
      n->str = t.value;
      return n;
    }
    case Tok::kOpenStmt:
      return ParseStatement();
    case Tok::kOpenExpr: {
      ++cur_;
      NodePtr n = MakeNode(NodeKind::kOutput, t.pos);
      n->a = ParseExpression();
      Expect(Tok::kCloseExpr, "'}}'");
      return n;
    }
    default:
      ErrorHere("unexpected " + Describe(cur_));
  }
}

std::vector<NodePtr> Parser::ParseBodyUntil(std::initializer_list<std::string_view> names,
                                            std::string_view what) {
  std::vector<NodePtr> body;
  while (!IsStatement(names)) {
    if (AtEnd()) ErrorHere("unexpected end of template: missing " + std::string(what));
    body.push_back(ParseAny());
  }
  return body;
}

// "{% endX %}"
void Parser::ExpectEnd(std::string_view name) {
  Expect(Tok::kOpenStmt, "'{%'");
  ExpectIdent(name);
  Expect(Tok::kCloseStmt, "'%}'");
}

NodePtr Parser::ParseStatement() {
  const Pos pos = Next().pos;  // {%
  if (!Is(Tok::kIdent)) ErrorHere("expected a statement name, got " + Describe(cur_));
  const std::string name = toks()[cur_++].value;
  if (name == "set") return ParseSet(pos);
  if (name == "if") {
    NodePtr n = ParseIf(pos);
    ExpectEnd("endif");
    return n;
  }
  if (name == "for") {
    NodePtr n = ParseFor(pos);
    ExpectEnd("endfor");
    return n;
  }
  if (name == "macro") {
    NodePtr n = ParseMacro(pos);
    ExpectEnd("endmacro");
    return n;
  }
  if (name == "call") return ParseCallBlock(pos);
  if (name == "filter") return ParseFilterBlock(pos);
  if (name == "break" || name == "continue") {
    Expect(Tok::kCloseStmt, "'%}'");
    return MakeNode(name == "break" ? NodeKind::kBreak : NodeKind::kContinue, pos);
  }
  Fail(pos, "unknown statement '" + name + "'");
}

NodePtr Parser::ParseSet(Pos pos) {
  NodePtr n = MakeNode(NodeKind::kSet, pos);
  n->a = ParseSequence(false);  // what it may assign to is checked when it runs
  if (Is(Tok::kEquals)) {
    ++cur_;
    n->b = ParseSequence(false);
  } else {
    Expect(Tok::kCloseStmt, "'=' or '%}'");
    n->body = ParseBodyUntil({"endset"}, "{% endset %}");
    Expect(Tok::kOpenStmt, "'{%'");
    ExpectIdent("endset");
  }
  Expect(Tok::kCloseStmt, "'%}'");
  return n;
}

NodePtr Parser::ParseIf(Pos pos) {
  DepthGuard guard(this);
  NodePtr n = MakeNode(NodeKind::kIf, pos);
  n->a = ParseExpression();
  Expect(Tok::kCloseStmt, "'%}'");
  n->body = ParseBodyUntil({"elif", "else", "endif"}, "{% endif %}");
  if (IsStatement({"elif"})) {
    const Pos elif_pos = toks()[cur_].pos;
    cur_ += 2;
    n->alt.push_back(ParseIf(elif_pos));
  } else if (IsStatement({"else"})) {
    cur_ += 2;
    Expect(Tok::kCloseStmt, "'%}'");
    n->alt = ParseBodyUntil({"endif"}, "{% endif %}");
  }
  return n;
}

NodePtr Parser::ParseFor(Pos pos) {
  NodePtr n = MakeNode(NodeKind::kFor, pos);
  n->a = ParseSequence(true);
  if (n->a->kind != NodeKind::kIdent && n->a->kind != NodeKind::kTuple) {
    Fail(n->a->pos, "expected a name or names for the loop variable");
  }
  if (!IsIdent("in")) ErrorHere("expected 'in' after the loop variable, got " + Describe(cur_));
  ++cur_;
  NodePtr iterable = ParseExpression();
  if (iterable->kind == NodeKind::kSelect) {
    n->b = std::move(iterable->a);
    n->c = std::move(iterable->b);
  } else {
    n->b = std::move(iterable);
  }
  Expect(Tok::kCloseStmt, "'%}'");
  n->body = ParseBodyUntil({"endfor", "else"}, "{% endfor %}");
  if (IsStatement({"else"})) {
    cur_ += 2;
    Expect(Tok::kCloseStmt, "'%}'");
    n->alt = ParseBodyUntil({"endfor"}, "{% endfor %}");
  }
  return n;
}

NodePtr Parser::ParseMacro(Pos pos) {
  NodePtr n = MakeNode(NodeKind::kMacro, pos);
  NodePtr name = ParsePrimary();
  if (name->kind != NodeKind::kIdent) Fail(name->pos, "expected a macro name");
  n->str = name->str;
  n->args = ParseArgs(/*parameters=*/true);
  Expect(Tok::kCloseStmt, "'%}'");
  n->body = ParseBodyUntil({"endmacro"}, "{% endmacro %}");
  FindSpecialArgs(n.get());
  return n;
}

NodePtr Parser::ParseCallBlock(Pos pos) {
  NodePtr n = MakeNode(NodeKind::kCallBlock, pos);
  if (Is(Tok::kLParen)) n->args = ParseArgs(/*parameters=*/true);
  NodePtr callee = ParsePrimary();
  if (callee->kind != NodeKind::kIdent) Fail(callee->pos, "expected a macro name after 'call'");
  NodePtr call = MakeNode(NodeKind::kCall, callee->pos);
  call->args = ParseArgs(/*parameters=*/false);
  call->a = std::move(callee);
  n->a = std::move(call);
  Expect(Tok::kCloseStmt, "'%}'");
  n->body = ParseBodyUntil({"endcall"}, "{% endcall %}");
  ExpectEnd("endcall");
  FindSpecialArgs(n.get());
  return n;
}

NodePtr Parser::ParseFilterBlock(Pos pos) {
  NodePtr n = MakeNode(NodeKind::kFilterBlock, pos);
  n->a = ParsePrimary();  // a name or a call of one, checked when it runs (as the reference)
  if (n->a->kind == NodeKind::kIdent && Is(Tok::kLParen)) n->a = ParseCall(std::move(n->a));
  Expect(Tok::kCloseStmt, "'%}'");
  n->body = ParseBodyUntil({"endfilter"}, "{% endfilter %}");
  ExpectEnd("endfilter");
  return n;
}

}  // namespace switchyard::chat_template::internal
