// UTF-8 well-formedness (RFC 3629), shared by whatever must keep text valid: JSON escaping
// of logs and errors (base/logging.h), HTTP query values (http/http.h), the proto3 strings
// the service stores (service/service.h).
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace switchyard {

// The length (1-4) of the well-formed UTF-8 sequence that starts at s[i] — no overlong
// forms, no surrogates, nothing above U+10FFFF — or 0 when the bytes there are not one
// (including a sequence cut short by the end of `s`). i < s.size().
size_t Utf8SequenceLength(std::string_view s, size_t i);

// Why `text` is not well-formed UTF-8 (RFC 3629), e.g. "byte 0xFF at offset 3 is not
// UTF-8"; "" when it is. A proto3 string field must hold UTF-8: protobuf writes one that
// does not, with a warning, and then refuses to parse it back.
std::string Utf8Problem(std::string_view text);
// The same, and control characters (U+0000-U+001F, U+007F-U+009F) are a problem too.
std::string TextProblem(std::string_view text);

}  // namespace switchyard
