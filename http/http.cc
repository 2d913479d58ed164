#include "http/http.h"

#include "base/logging.h"
#include "base/mutex.h"
#include "base/utf8.h"

namespace switchyard::http {

std::string_view HttpRequest::path() const {
  std::string_view t = target;
  size_t q = t.find('?');
  return q == std::string_view::npos ? t : t.substr(0, q);
}

namespace {

// The raw (still encoded) value of the first `key` parameter of `target`'s query.
std::optional<std::string_view> RawQueryValue(std::string_view target, std::string_view key) {
  size_t q = target.find('?');
  if (q == std::string_view::npos) return std::nullopt;
  std::string_view rest = target.substr(q + 1);
  while (!rest.empty()) {
    size_t amp = rest.find('&');
    std::string_view kv = rest.substr(0, amp);
    size_t eq = kv.find('=');
    if (kv.substr(0, eq) == key)
      return eq == std::string_view::npos ? std::string_view() : kv.substr(eq + 1);
    if (amp == std::string_view::npos) break;
    rest = rest.substr(amp + 1);
  }
  return std::nullopt;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

Result<std::string> HttpRequest::Query(std::string_view key) const {
  std::optional<std::string_view> raw = RawQueryValue(target, key);
  if (!raw) return std::string();
  std::optional<std::string> value = FormDecode(*raw);
  if (!value) {
    return Status::InvalidArgument(std::string(key) +
                                   ": malformed %-escape (want % and two hex digits)");
  }
  if (std::string problem = TextProblem(*value); !problem.empty()) {
    return Status::InvalidArgument(std::string(key) + ": " + problem +
                                   " (query values are UTF-8 text without control characters)");
  }
  return std::move(*value);
}

namespace {

std::optional<std::string> Decode(std::string_view encoded, bool plus_is_space) {
  std::string out;
  out.reserve(encoded.size());
  for (size_t i = 0; i < encoded.size(); ++i) {
    char c = encoded[i];
    if (c == '+' && plus_is_space) {
      out += ' ';
    } else if (c != '%') {
      out += c;
    } else {
      if (i + 2 >= encoded.size()) return std::nullopt;
      int hi = HexDigit(encoded[i + 1]), lo = HexDigit(encoded[i + 2]);
      if (hi < 0 || lo < 0) return std::nullopt;
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    }
  }
  return out;
}

}  // namespace

std::optional<std::string> PercentDecode(std::string_view encoded) {
  return Decode(encoded, /*plus_is_space=*/false);
}

std::optional<std::string> FormDecode(std::string_view encoded) {
  return Decode(encoded, /*plus_is_space=*/true);
}

std::string HttpRequest::Header(std::string_view lower_name) const {
  auto it = headers.find(std::string(lower_name));
  return it == headers.end() ? "" : it->second;
}

ResponseStream::ResponseStream(size_t max_queued_bytes) : max_queued_bytes_(max_queued_bytes) {}

bool ResponseStream::Write(std::string chunk) {
  {
    MutexLock lock(&mu_);
    if (closed_ || cancelled()) return false;
    if (chunk.empty()) return true;
    if (pending_.size() + in_flight_ + chunk.size() <= max_queued_bytes_) {
      if (pending_.empty()) {
        pending_ = std::move(chunk);
      } else {
        pending_ += chunk;
      }
      WakeLocked();
      return true;
    }
  }
  Cancel(/*wake=*/true);  // past the cap: a client this slow is not served
  return false;
}

void ResponseStream::Close() {
  MutexLock lock(&mu_);
  if (closed_ || cancelled()) return;
  closed_ = true;
  WakeLocked();
}

void ResponseStream::SetOnCancel(std::function<void()> on_cancel) {
  {
    MutexLock lock(&mu_);
    if (!cancelled()) {
      on_cancel_ = std::move(on_cancel);
      return;
    }
  }
  if (on_cancel) on_cancel();
}

size_t ResponseStream::queued_bytes() const {
  MutexLock lock(&mu_);
  return pending_.size() + in_flight_;
}

void ResponseStream::WakeLocked() {
  if (wake_ && !wake_pending_) {
    wake_pending_ = true;
    wake_();
  }
}

bool ResponseStream::Attach(std::function<void()> wake) {
  MutexLock lock(&mu_);
  if (attached_ || cancelled()) return false;
  attached_ = true;
  wake_ = std::move(wake);
  wake_pending_ = true;  // the connection takes what is queued right away
  return true;
}

ResponseStream::Batch ResponseStream::Take() {
  MutexLock lock(&mu_);
  Batch batch;
  batch.bytes.swap(pending_);
  in_flight_ = batch.bytes.size();
  batch.end = closed_;
  // With something to send the connection comes back for more by itself; idle, it waits.
  wake_pending_ = !batch.bytes.empty() || batch.end;
  return batch;
}

void ResponseStream::Finish() {
  MutexLock lock(&mu_);
  closed_ = true;
  finished_ = true;
  in_flight_ = 0;
  wake_ = nullptr;
}

void ResponseStream::Cancel(bool wake) {
  std::function<void()> on_cancel;
  {
    MutexLock lock(&mu_);
    if (finished_ || cancelled()) return;
    cancelled_.store(true, std::memory_order_release);
    pending_ = std::string();
    in_flight_ = 0;
    // Under the lock: once Cancel() returns nobody posts to the connection's io_context,
    // which the server may destroy after stopping.
    if (wake && wake_) wake_();
    wake_ = nullptr;
    on_cancel = std::move(on_cancel_);
  }
  if (on_cancel) on_cancel();
}

HttpResponse JsonError(int status, std::string_view code, std::string_view message,
                       std::string_view details_json) {
  HttpResponse r;
  r.status = status;
  r.body = "{\"code\":\"" + JsonEscape(code) + "\",\"message\":\"" + JsonEscape(message) +
           "\",\"details\":" + std::string(details_json) + "}";
  return r;
}

}  // namespace switchyard::http
