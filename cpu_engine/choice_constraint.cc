// ChoiceConstraint (see choice_constraint.h).
#include "cpu_engine/choice_constraint.h"

namespace switchyard::cpu_engine {

bool ChoiceConstraint::CanFeed(std::string_view bytes) const {
  if (bytes.empty()) return false;
  const size_t at = output_.size();
  for (const std::string& c : *choices_)
    if (c.size() >= at + bytes.size() && c.compare(0, at, output_) == 0 &&
        c.compare(at, bytes.size(), bytes) == 0)
      return true;
  return false;
}

bool ChoiceConstraint::Feed(std::string_view bytes) {
  if (!CanFeed(bytes)) return false;
  output_.append(bytes);
  return true;
}

bool ChoiceConstraint::complete() const {
  for (const std::string& c : *choices_)
    if (c == output_) return true;
  return false;
}

void ChoiceConstraint::AllowedTokens(const std::vector<std::string>& token_bytes,
                                     std::vector<uint8_t>* allowed) const {
  allowed->assign(token_bytes.size(), 0);
  for (size_t t = 0; t < token_bytes.size(); ++t) (*allowed)[t] = CanFeed(token_bytes[t]) ? 1 : 0;
}

}  // namespace switchyard::cpu_engine
