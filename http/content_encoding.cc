#include "http/content_encoding.h"

#include <zlib.h>
#include <zstd.h>
#include <zstd_errors.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <climits>
#include <memory>
#include <vector>

namespace switchyard::http {
namespace {

enum class Coding { kGzip, kDeflate, kZstd };

constexpr size_t kChunk = 64 * 1024;
// zstd: frames may ask for a window of up to max(2^23 bytes, the limit); a bigger one is
// refused before its buffer is allocated. 2^23 covers what zstd's levels 1-19 use.
constexpr int kMinZstdWindowLog = 23;

std::string Trimmed(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The codings of a Content-Encoding value, in the order they were applied.
Status ParseCodings(std::string_view value, std::vector<Coding>* out) {
  size_t pos = 0;
  while (pos <= value.size()) {
    size_t comma = std::min(value.find(',', pos), value.size());
    std::string name = Trimmed(value.substr(pos, comma - pos));
    pos = comma + 1;
    if (name.empty() || name == "identity") continue;
    if (name == "gzip" || name == "x-gzip") {
      out->push_back(Coding::kGzip);
    } else if (name == "deflate") {
      out->push_back(Coding::kDeflate);
    } else if (name == "zstd") {
      out->push_back(Coding::kZstd);
    } else {
      return Status::NotSupported("Content-Encoding '" + name +
                                  "' is not supported (gzip, deflate, zstd and identity are)");
    }
  }
  return Status::OK();
}

Status TooLarge(size_t limit) {
  return Status::ResourceExhausted("request body exceeds the limit of " + std::to_string(limit) +
                                   " bytes once decompressed");
}

// Appends `n` bytes unless the body would pass `limit`.
Status Append(const char* data, size_t n, size_t limit, std::string* out) {
  if (n > limit - out->size()) return TooLarge(limit);
  out->append(data, n);
  return Status::OK();
}

// gzip (window_bits 16 + 15; members one after another) or the zlib format (15).
Status Inflate(std::string_view in, int window_bits, size_t limit, std::string* out) {
  z_stream z{};
  if (inflateInit2(&z, window_bits) != Z_OK) return Status::Internal("zlib: inflateInit2 failed");
  std::unique_ptr<z_stream, int (*)(z_stream*)> end(&z, inflateEnd);
  std::array<char, kChunk> buf;
  const bool gzip = window_bits > 15;
  const char* next = in.data();
  size_t left = in.size();
  for (;;) {
    if (z.avail_in == 0 && left > 0) {  // fed in pieces a uInt can count
      z.avail_in = static_cast<uInt>(std::min<size_t>(left, UINT_MAX));
      z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(next));
      next += z.avail_in;
      left -= z.avail_in;
    }
    z.next_out = reinterpret_cast<Bytef*>(buf.data());
    z.avail_out = static_cast<uInt>(buf.size());
    int r = inflate(&z, Z_NO_FLUSH);
    SY_RETURN_IF_ERROR(Append(buf.data(), buf.size() - z.avail_out, limit, out));
    if (r == Z_STREAM_END) {
      if (z.avail_in == 0 && left == 0) return Status::OK();
      if (!gzip) return Status::InvalidArgument("deflate body: data after the end of the stream");
      inflateReset(&z);  // another gzip member
    } else if (r == Z_BUF_ERROR || (r == Z_OK && z.avail_in == 0 && left == 0 && z.avail_out > 0)) {
      return Status::InvalidArgument(std::string(gzip ? "gzip" : "deflate") +
                                     " body: truncated (the stream does not end)");
    } else if (r != Z_OK) {
      return Status::InvalidArgument(std::string(gzip ? "gzip" : "deflate") + " body is corrupt: " +
                                     (z.msg ? z.msg : "zlib error " + std::to_string(r)));
    }
  }
}

int CeilLog2(size_t n) {
  int bits = 0;
  while (bits < 63 && (size_t{1} << bits) < n) ++bits;
  return bits;
}

Status Unzstd(std::string_view in, size_t limit, std::string* out) {
  std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> d(ZSTD_createDCtx(), ZSTD_freeDCtx);
  if (!d) return Status::Internal("zstd: ZSTD_createDCtx failed");
  ZSTD_bounds b = ZSTD_dParam_getBounds(ZSTD_d_windowLogMax);
  int wlog = std::clamp(CeilLog2(limit), kMinZstdWindowLog, b.upperBound);
  ZSTD_DCtx_setParameter(d.get(), ZSTD_d_windowLogMax, wlog);
  std::array<char, kChunk> buf;
  ZSTD_inBuffer ib{in.data(), in.size(), 0};
  size_t hint = 1;  // 0 once a frame ended with nothing of the next one read
  for (;;) {
    ZSTD_outBuffer ob{buf.data(), buf.size(), 0};
    size_t r = ZSTD_decompressStream(d.get(), &ob, &ib);
    if (ZSTD_isError(r)) {
      if (ZSTD_getErrorCode(r) == ZSTD_error_frameParameter_windowTooLarge) return TooLarge(limit);
      return Status::InvalidArgument(std::string("zstd body is corrupt: ") + ZSTD_getErrorName(r));
    }
    SY_RETURN_IF_ERROR(Append(buf.data(), ob.pos, limit, out));
    hint = r;
    if (ib.pos == ib.size && ob.pos < ob.size) break;  // all read, all written
  }
  if (hint != 0) return Status::InvalidArgument("zstd body: truncated (the frame does not end)");
  return Status::OK();
}

}  // namespace

Status DecodeContentEncoding(std::string_view content_encoding, size_t limit, std::string* body) {
  std::vector<Coding> codings;
  SY_RETURN_IF_ERROR(ParseCodings(content_encoding, &codings));
  for (auto it = codings.rbegin(); it != codings.rend(); ++it) {
    if (body->empty()) return Status::OK();  // nothing was sent: nothing to decode
    std::string out;
    switch (*it) {
      case Coding::kGzip:
        SY_RETURN_IF_ERROR(Inflate(*body, 16 + MAX_WBITS, limit, &out));
        break;
      case Coding::kDeflate:
        SY_RETURN_IF_ERROR(Inflate(*body, MAX_WBITS, limit, &out));
        break;
      case Coding::kZstd:
        SY_RETURN_IF_ERROR(Unzstd(*body, limit, &out));
        break;
    }
    body->swap(out);
  }
  return Status::OK();
}

}  // namespace switchyard::http
