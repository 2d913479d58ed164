// ChoiceConstraint: guided choice — a sequence's output is exactly one of a list of texts
// (SequenceSpec::choices). A token is allowed when its bytes keep the output a prefix of
// one of them; the output is complete once it equals one.
//
// Thread-safety: a value type; copies share the list.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace switchyard::cpu_engine {

class ChoiceConstraint {
 public:
  explicit ChoiceConstraint(std::vector<std::string> choices)
      : choices_(std::make_shared<const std::vector<std::string>>(std::move(choices))) {}

  // Whether `bytes` (non-empty) keep the output a prefix of a choice.
  bool CanFeed(std::string_view bytes) const;
  // Feeds bytes; false (and the state unchanged) when CanFeed would be false.
  bool Feed(std::string_view bytes);
  // The output equals one of the choices.
  bool complete() const;
  // allowed[t] = 1 for each token t whose bytes CanFeed, else 0 (resized to the
  // vocabulary: token_bytes.size()).
  void AllowedTokens(const std::vector<std::string>& token_bytes,
                     std::vector<uint8_t>* allowed) const;
  const std::string& output() const { return output_; }

 private:
  std::shared_ptr<const std::vector<std::string>> choices_;
  std::string output_;
};

}  // namespace switchyard::cpu_engine
