// The parser's class, shared by parser.cc (statements) and parser_expr.cc (expressions).
// Internal to chat_template; see parser.h for the grammar. Not thread-safe (one per parse).
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "chat_template/internal/ast.h"
#include "chat_template/internal/lexer.h"

namespace switchyard::chat_template::internal {

class Parser {
 public:
  Parser(const Lexed& lexed, int max_depth) : lexed_(lexed), max_depth_(max_depth) {}

  std::vector<NodePtr> ParseProgram();

 private:
  // Bounds recursion: every recursive rule holds one while it runs.
  class DepthGuard {
   public:
    explicit DepthGuard(Parser* p);
    ~DepthGuard() { --p_->depth_; }

   private:
    Parser* p_;
  };

  // Tokens.
  const std::vector<Token>& toks() const { return lexed_.tokens; }
  bool AtEnd() const { return cur_ >= toks().size(); }
  bool Is(Tok t, size_t ahead = 0) const;
  bool IsIdent(std::string_view name, size_t ahead = 0) const;
  bool IsStatement(std::initializer_list<std::string_view> names) const;
  const Token& Next();  // consumes; errors at the end
  const Token& Expect(Tok t, std::string_view what);
  void ExpectIdent(std::string_view name);
  Pos Here() const;
  [[noreturn]] void ErrorHere(const std::string& msg) const;
  std::string Describe(size_t i) const;

  // Statements (parser.cc).
  NodePtr ParseAny();
  NodePtr ParseStatement();
  std::vector<NodePtr> ParseBodyUntil(std::initializer_list<std::string_view> names,
                                      std::string_view what);
  void ExpectEnd(std::string_view name);
  NodePtr ParseSet(Pos pos);
  NodePtr ParseIf(Pos pos);
  NodePtr ParseFor(Pos pos);
  NodePtr ParseMacro(Pos pos);
  NodePtr ParseCallBlock(Pos pos);
  NodePtr ParseFilterBlock(Pos pos);

  // Expressions (parser_expr.cc), lowest precedence first.
  NodePtr ParseExpression();
  NodePtr ParseSequence(bool primary);
  NodePtr ParseIfExpr();
  NodePtr ParseOr();
  NodePtr ParseAnd();
  NodePtr ParseNot();
  NodePtr ParseComparison();
  NodePtr ParseAdditive();
  NodePtr ParseMultiplicative();
  NodePtr ParsePower();
  NodePtr ParseTest();
  void ParseTestArgument(Node* test);
  NodePtr ParseFilter();
  NodePtr ParseUnarySign();
  NodePtr ParseCallMember();
  NodePtr ParseCall(NodePtr callee);
  std::vector<NodePtr> ParseArgs(bool parameters);
  void ParseArgList(bool parameters, std::vector<NodePtr>* out);
  NodePtr ParseMember(NodePtr object);
  NodePtr ParseSubscript(Pos pos);
  NodePtr ParsePrimary();
  NodePtr ParseNumber(const Token& t);
  NodePtr ParseListLiteral(Pos pos);
  NodePtr ParseDictLiteral(Pos pos);

  const Lexed& lexed_;
  const int max_depth_;
  size_t cur_ = 0;
  int depth_ = 0;
};

// Marks in node->special which of caller/kwargs/varargs a macro or call block reads.
void FindSpecialArgs(Node* node);

}  // namespace switchyard::chat_template::internal
