// Which bytes of a streamed answer's decoded text are settled enough to send, whatever the
// protocol: a stream holds back a tail that may still begin a stop sequence, and a
// character whose bytes have not all been generated.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace switchyard::frontends {

// How many bytes at the end of a streamed answer's decoded `text` may still change or be
// cut when more tokens come, so are not sent yet: trailing U+FFFD (the decoder's stand-in
// for a character whose bytes have not all been generated) and the longest tail that
// begins one of the `stops` sequences.
size_t UnsettledTail(std::string_view text, const std::vector<std::string>& stops);

// The length of the longest prefix of `text` that does not end inside a UTF-8 sequence: stream
// text[0..n) now and keep the rest for the next delta, so multi-byte characters are not split.
size_t Utf8SafePrefix(std::string_view text);

}  // namespace switchyard::frontends
