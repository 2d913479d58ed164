// The normalizer of tokenizer.json: none, NFC, or a Sequence of those (NFC applied twice is
// NFC once). Any other type is refused by name: NotSupported naming the file and the JSON
// path ("normalizer.normalizers[1].type: \"Lowercase\" is not supported ...").
//
// NFC runs through ICU; text that is all ASCII is returned as it is without calling it, and
// text ICU says is already NFC is not copied.
//
// Thread-safety: immutable after FromJson; Apply may run on several threads.
#pragma once

#include <string>
#include <string_view>

#include "base/result.h"
#include "tokenizer/internal/json_file.h"

namespace switchyard::tokenizer::internal {

class Normalizer {
 public:
  // `j` is tokenizer.json's "normalizer" member; `file` names it in errors.
  static Result<Normalizer> FromJson(const Json& j, const std::string& file);
  // A normalizer that does nothing.
  Normalizer() = default;

  bool active() const { return nfc_; }
  // The normalized text: `text` itself when unchanged, else a view of *scratch.
  Result<std::string_view> Apply(std::string_view text, std::string* scratch) const;

 private:
  bool nfc_ = false;
};

}  // namespace switchyard::tokenizer::internal
