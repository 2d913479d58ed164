// TokenTrie: a vocabulary's tokens as a byte trie, for walking every token at once with a
// byte automaton (JsonObjectConstraint::AllowedTokens): a prefix the automaton refuses
// prunes every token that starts with it, and each shared prefix is stepped once.
//
// Layout: the nodes in preorder (the root left out), each with its byte, its depth (the
// length of its prefix) and the index just past its subtree, so a walk is one pass over
// an array that skips a refused subtree with one jump. A node's parent is the last node
// one level up before it. Tokens without bytes (special tokens) are left out: no walk
// allows them.
//
// Thread-safety: immutable once built; share it freely.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace switchyard::cpu_engine {

class TokenTrie {
 public:
  struct Node {
    uint32_t end = 0;                           // index just past the subtree
    uint32_t tokens_begin = 0, tokens_end = 0;  // tokens() range: tokens spelled by this prefix
    uint16_t depth = 0;                         // bytes of the prefix (1 for a root child)
    uint8_t byte = 0;
  };

  // `token_bytes[id]`: the raw bytes of token id (empty: a special token). Tokens longer
  // than 65535 bytes are left out too.
  explicit TokenTrie(const std::vector<std::string>& token_bytes);

  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<int32_t>& tokens() const { return tokens_; }
  size_t vocab() const { return vocab_; }  // token_bytes.size()
  size_t max_depth() const { return max_depth_; }

 private:
  std::vector<Node> nodes_;
  std::vector<int32_t> tokens_;
  size_t vocab_ = 0;
  size_t max_depth_ = 0;
};

}  // namespace switchyard::cpu_engine
