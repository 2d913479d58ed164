#include "tokenizer/internal/normalizer.h"

#include <unicode/bytestream.h>
#include <unicode/normalizer2.h>

#include "tokenizer/internal/unicode.h"

namespace switchyard::tokenizer::internal {
namespace {

// Sets *nfc when `j` (at `path`) normalizes to NFC; refuses every other type.
Status Walk(const Json& j, const std::string& file, const std::string& path, bool* nfc) {
  if (j.is_null()) return Status::OK();
  if (!j.is_object() || !j.contains("type") || !j["type"].is_string()) {
    return JsonInvalid(file, path, "must be null or an object with a \"type\"");
  }
  const std::string type = j["type"].get<std::string>();
  if (type == "NFC") {
    *nfc = true;
    return Status::OK();
  }
  if (type == "Sequence") {
    auto it = j.find("normalizers");
    if (it == j.end() || !it->is_array()) {
      return JsonInvalid(file, path + ".normalizers", "must be an array");
    }
    for (size_t i = 0; i < it->size(); ++i) {
      SY_RETURN_IF_ERROR(
          Walk((*it)[i], file, path + ".normalizers[" + std::to_string(i) + "]", nfc));
    }
    return Status::OK();
  }
  return JsonUnsupported(file, path + ".type",
                         Describe(j["type"]) +
                             " is not supported (supported: null, \"NFC\", "
                             "\"Sequence\" of those)");
}

const icu::Normalizer2* Nfc() {
  UErrorCode status = U_ZERO_ERROR;
  static const icu::Normalizer2* nfc = icu::Normalizer2::getNFCInstance(status);
  return nfc;
}

}  // namespace

Result<Normalizer> Normalizer::FromJson(const Json& j, const std::string& file) {
  Normalizer n;
  SY_RETURN_IF_ERROR(Walk(j, file, "normalizer", &n.nfc_));
  if (n.nfc_ && Nfc() == nullptr) return Status::Internal("ICU has no NFC normalizer");
  return n;
}

Result<std::string_view> Normalizer::Apply(std::string_view text, std::string* scratch) const {
  if (!nfc_ || IsAscii(text)) return text;
  const icu::Normalizer2* nfc = Nfc();
  UErrorCode status = U_ZERO_ERROR;
  const icu::StringPiece piece(text.data(), static_cast<int32_t>(text.size()));
  if (nfc->isNormalizedUTF8(piece, status) && U_SUCCESS(status)) return text;
  status = U_ZERO_ERROR;
  scratch->clear();
  icu::StringByteSink<std::string> sink(scratch);
  nfc->normalizeUTF8(0, piece, sink, nullptr, status);
  if (U_FAILURE(status)) {
    return Status::Internal(std::string("ICU NFC normalization failed: ") + u_errorName(status));
  }
  return std::string_view(*scratch);
}

}  // namespace switchyard::tokenizer::internal
