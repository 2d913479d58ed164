// UTF-8 well-formedness (RFC 3629), shared by whatever must keep text valid: JSON escaping
// of logs and errors (base/logging.h), HTTP query values (api/http.h).
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <string_view>

namespace switchyard {

// The length (1-4) of the well-formed UTF-8 sequence that starts at s[i] — no overlong
// forms, no surrogates, nothing above U+10FFFF — or 0 when the bytes there are not one
// (including a sequence cut short by the end of `s`). i < s.size().
size_t Utf8SequenceLength(std::string_view s, size_t i);

}  // namespace switchyard
