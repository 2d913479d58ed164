// Compressed request bodies: decoding the Content-Encoding of a request (RFC 9110 8.4)
// before its handler sees it. Clients such as the Codex CLI may send bodies as
// `Content-Encoding: zstd` or `gzip`; HttpServer (http_server.h) decodes them with this, so
// that no route, front or proxy ever sees a compressed body.
//
// Codings: `gzip` (and its alias `x-gzip`; concatenated members too), `deflate` (the zlib
// format), `zstd` (one frame or several), and `identity`; a list ("gzip, zstd") names them
// in the order they were applied and is decoded in reverse. The decoded size is checked
// while inflating, against the same limit as a plain body: a body that would inflate past it
// (a "zip bomb") stops there, never allocating more than the limit (and, for zstd, a window
// of at most max(1 MiB, the limit)).
//
// Errors: NotSupported for a coding this does not know (HTTP 415, naming it),
// ResourceExhausted when the decoded body passes the limit (413, naming the limit),
// InvalidArgument for a corrupt or truncated body (400).
//
// Thread-safety: a pure function; any thread.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "base/status.h"

namespace switchyard::http {

// Decodes `*body` as `content_encoding` says, in place; at most `limit` bytes result.
[[nodiscard]] Status DecodeContentEncoding(std::string_view content_encoding, size_t limit,
                                           std::string* body);

}  // namespace switchyard::http
