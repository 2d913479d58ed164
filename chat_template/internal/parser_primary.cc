// The parser of the Jinja subset: arguments, subscripts, literals, and the special names a
// macro reads. See parser.h.
#include <charconv>
#include <cmath>
#include <set>

#include "chat_template/internal/parser_impl.h"

namespace switchyard::chat_template::internal {

// Arguments of a call, or parameters of a macro: positional, name=value, *list, **dict.
// Commas between arguments are optional, as in the reference.
void Parser::ParseArgList(bool parameters, std::vector<NodePtr>* out) {
  std::set<std::string> names;
  bool saw_keyword = false;
  bool saw_spread = false;
  while (!Is(Tok::kRParen)) {
    if (AtEnd()) ErrorHere("unexpected end of template: missing ')'");
    const Pos pos = Here();
    const bool kw_spread = Is(Tok::kPower);
    const bool spread = Is(Tok::kMultiplicative) && toks()[cur_].value == "*";
    if (parameters && (kw_spread || spread))
      ErrorHere("'*' and '**' are not allowed in parameters");
    if (kw_spread) {
      ++cur_;
      NodePtr n = MakeNode(NodeKind::kKwSpread, pos);
      n->a = ParseExpression();
      out->push_back(std::move(n));
      if (Is(Tok::kComma)) ++cur_;
      if (!Is(Tok::kRParen)) ErrorHere("'**' must be applied to the last argument");
      break;
    }
    NodePtr arg;
    if (spread) {
      if (saw_spread) ErrorHere("only one '*' argument is allowed");
      saw_spread = true;
      ++cur_;
      arg = MakeNode(NodeKind::kSpread, pos);
      arg->a = ParseExpression();
    } else {
      arg = ParseExpression();
      if (Is(Tok::kEquals)) {
        ++cur_;
        if (arg->kind != NodeKind::kIdent) Fail(arg->pos, "expected a name before '='");
        NodePtr kw = MakeNode(NodeKind::kKwarg, arg->pos);
        kw->str = arg->str;
        kw->a = ParseExpression();
        arg = std::move(kw);
      }
      if (parameters) {
        if (arg->kind != NodeKind::kIdent && arg->kind != NodeKind::kKwarg) {
          Fail(arg->pos, "expected a parameter name");
        }
        if (!names.insert(arg->str).second)
          Fail(arg->pos, "duplicate parameter '" + arg->str + "'");
      }
      if (arg->kind == NodeKind::kKwarg) {
        saw_keyword = true;
      } else if (saw_keyword) {
        Fail(arg->pos, parameters ? "a parameter without default follows one with a default"
                                  : "a positional argument follows a keyword argument");
      } else if (saw_spread) {
        Fail(arg->pos, "a positional argument follows '*'");
      }
    }
    out->push_back(std::move(arg));
    if (Is(Tok::kComma)) ++cur_;
  }
}

NodePtr Parser::ParseMember(NodePtr object) {
  while (Is(Tok::kDot) || Is(Tok::kLBracket)) {
    const Token& op = toks()[cur_++];
    NodePtr n = MakeNode(NodeKind::kMember, op.pos);
    n->flag = op.type == Tok::kLBracket;
    if (n->flag) {
      n->b = ParseSubscript(op.pos);
      Expect(Tok::kRBracket, "']'");
    } else {
      n->b = ParsePrimary();
      if (n->b->kind != NodeKind::kIdent && n->b->kind != NodeKind::kInt) {
        Fail(n->b->pos, "expected a name or an integer after '.'");
      }
    }
    n->a = std::move(object);
    object = std::move(n);
  }
  return object;
}

// Inside "[...]": an index, or a slice "a:b:c" with any part left out. As in the
// reference, "[a b]" is the index a.
NodePtr Parser::ParseSubscript(Pos pos) {
  std::vector<NodePtr> parts;
  bool slice = false;
  while (!Is(Tok::kRBracket)) {
    if (AtEnd()) ErrorHere("unexpected end of template: missing ']'");
    if (Is(Tok::kColon)) {
      parts.push_back(nullptr);
      ++cur_;
      slice = true;
      continue;
    }
    parts.push_back(ParseExpression());
    if (Is(Tok::kColon)) {
      ++cur_;
      slice = true;
    }
  }
  if (parts.empty()) ErrorHere("expected an index or a slice inside '[]'");
  if (!slice) return std::move(parts[0]);
  if (parts.size() > 3) Fail(pos, "a slice takes at most 3 parts");
  NodePtr n = MakeNode(NodeKind::kSlice, pos);
  n->a = std::move(parts[0]);
  if (parts.size() > 1) n->b = std::move(parts[1]);
  if (parts.size() > 2) n->c = std::move(parts[2]);
  return n;
}

NodePtr Parser::ParseNumber(const Token& t) {
  const bool is_float = t.value.find('.') != std::string::npos;
  NodePtr n = MakeNode(is_float ? NodeKind::kFloat : NodeKind::kInt, t.pos);
  std::string_view digits = t.value;
  bool neg = false;
  if (!digits.empty() && (digits[0] == '-' || digits[0] == '+')) {
    neg = digits[0] == '-';
    digits.remove_prefix(1);
  }
  double v = 0;
  const auto r = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (r.ec == std::errc::result_out_of_range) v = HUGE_VAL;
  n->number = neg ? -v : v;
  return n;
}

NodePtr Parser::ParseListLiteral(Pos pos) {
  NodePtr n = MakeNode(NodeKind::kList, pos);
  while (!Is(Tok::kRBracket)) {
    if (AtEnd()) ErrorHere("unexpected end of template: missing ']'");
    n->args.push_back(ParseExpression());
    if (Is(Tok::kComma)) ++cur_;
  }
  ++cur_;
  return n;
}

NodePtr Parser::ParseDictLiteral(Pos pos) {
  NodePtr n = MakeNode(NodeKind::kDict, pos);
  while (!Is(Tok::kRBrace)) {
    if (AtEnd()) ErrorHere("unexpected end of template: missing '}'");
    n->args.push_back(ParseExpression());
    Expect(Tok::kColon, "':' between a key and its value");
    n->args.push_back(ParseExpression());
    if (Is(Tok::kComma)) ++cur_;
  }
  ++cur_;
  return n;
}

NodePtr Parser::ParsePrimary() {
  DepthGuard guard(this);
  const size_t at = cur_;
  const Token& t = Next();
  switch (t.type) {
    case Tok::kNumber:
      return ParseNumber(t);
    case Tok::kString: {
      NodePtr n = MakeNode(NodeKind::kString, t.pos);
      n->str = t.value;
      while (Is(Tok::kString)) n->str += toks()[cur_++].value;  // 'a' 'b' is 'ab'
      return n;
    }
    case Tok::kIdent: {
      NodePtr n = MakeNode(NodeKind::kIdent, t.pos);
      n->str = t.value;
      return n;
    }
    case Tok::kLParen: {
      NodePtr n = ParseSequence(false);
      Expect(Tok::kRParen, "')'");
      return n;
    }
    case Tok::kLBracket:
      return ParseListLiteral(t.pos);
    case Tok::kLBrace:
      return ParseDictLiteral(t.pos);
    default:
      Fail(t.pos, "unexpected " + Describe(at));
  }
}

namespace {

int SpecialBit(std::string_view name) {
  if (name == "caller") return kUsesCaller;
  if (name == "kwargs") return kUsesKwargs;
  if (name == "varargs") return kUsesVarargs;
  return 0;
}

// Walks a macro body in source order as the reference does: a special name counts as read
// unless a parameter, loop variable or set target of that name was declared before it.
class SpecialArgFinder {
 public:
  void Declare(const Node& target) {
    if (target.kind == NodeKind::kIdent || target.kind == NodeKind::kKwarg) {
      declared_ |= SpecialBit(target.str);
    } else if (target.kind == NodeKind::kTuple) {
      for (const NodePtr& e : target.args) Declare(*e);
    }
  }
  void Params(const std::vector<NodePtr>& params) {
    for (const NodePtr& p : params) Declare(*p);
    for (const NodePtr& p : params) {
      if (p->kind == NodeKind::kKwarg) Visit(p->a.get());
    }
  }
  void VisitAll(const std::vector<NodePtr>& nodes) {
    for (const NodePtr& n : nodes) Visit(n.get());
  }
  void Visit(const Node* n);
  int accessed() const { return accessed_; }

 private:
  int declared_ = 0;
  int accessed_ = 0;
};

void SpecialArgFinder::Visit(const Node* n) {
  if (n == nullptr) return;
  switch (n->kind) {
    case NodeKind::kFor:
      Declare(*n->a);
      Visit(n->b.get()), VisitAll(n->body), VisitAll(n->alt), Visit(n->c.get());
      return;
    case NodeKind::kSet:
      Declare(*n->a);
      Visit(n->b.get()), VisitAll(n->body);
      return;
    case NodeKind::kMacro:
      Params(n->args), VisitAll(n->body);
      return;
    case NodeKind::kCallBlock:
      Visit(n->a.get()), Params(n->args), VisitAll(n->body);
      return;
    case NodeKind::kIdent: {
      const int bit = SpecialBit(n->str);
      if ((declared_ & bit) == 0) accessed_ |= bit;
      return;
    }
    case NodeKind::kMember:
      Visit(n->a.get());
      if (n->flag) Visit(n->b.get());
      return;
    case NodeKind::kFilter:
      Visit(n->a.get());
      if (n->b->kind == NodeKind::kCall) VisitAll(n->b->args);
      return;
    case NodeKind::kFilterBlock:
      VisitAll(n->body);
      if (n->a->kind == NodeKind::kCall) VisitAll(n->a->args);
      return;
    case NodeKind::kTest:
    case NodeKind::kKwarg:
      Visit(n->a.get());
      return;
    default:
      Visit(n->a.get()), Visit(n->b.get()), Visit(n->c.get());
      VisitAll(n->args), VisitAll(n->body), VisitAll(n->alt);
  }
}

}  // namespace

void FindSpecialArgs(Node* node) {
  SpecialArgFinder finder;
  for (const NodePtr& p : node->args) finder.Declare(*p);
  finder.VisitAll(node->body);
  node->special = static_cast<uint8_t>(finder.accessed());
}

}  // namespace switchyard::chat_template::internal
