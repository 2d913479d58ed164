// UpstreamClient (see upstream_client.h): the upstreams parsed from their URLs, the pick
// of one (rendezvous hashing or round-robin), the client's core with its I/O threads and
// each upstream's pool of idle keep-alive connections, and Forward(), which hands a
// request to an exchange (upstream_exchange.cc).
#include "upstream/upstream_client.h"

#include <sys/socket.h>

#include <boost/asio/post.hpp>
#include <cctype>
#include <cerrno>
#include <utility>

#include "base/mutex.h"
#include "upstream/internal/upstream_pool.h"

namespace switchyard::upstream {
namespace internal {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace internal

namespace {

using internal::Conn;
using internal::Lower;
using internal::Upstream;

// Whether an idle pooled connection is still usable: not closed by the peer, nothing
// unexpected to read.
bool StillOpen(Conn& c) {
  if (!c.stream.socket().is_open() || c.buffer.size() != 0) return false;
  char byte;
  ssize_t n = ::recv(c.stream.socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

uint64_t Fnv1a(std::string_view a, std::string_view b) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](std::string_view s) {
    for (unsigned char c : s) {
      h ^= c;
      h *= 1099511628211ull;
    }
  };
  mix(a);
  mix(std::string_view("\0", 1));
  mix(b);
  // Final avalanche (splitmix64), so nearby keys spread.
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebull;
  h ^= h >> 31;
  return h;
}

// Parses "http://host[:port][/]".
Status ParseUrl(const std::string& raw, Upstream* up) {
  auto bad = [&raw](std::string_view why) {
    return Status::InvalidArgument("upstream URL '" + raw + "': " + std::string(why) +
                                   " (expected http://host:port)");
  };
  std::string lower = Lower(raw);
  if (lower.rfind("https://", 0) == 0) {
    return bad(
        "https is not supported (no TLS in the upstream client); use http:// or a "
        "local TLS-terminating proxy");
  }
  if (lower.rfind("http://", 0) != 0) return bad("not an http:// URL");
  std::string rest = raw.substr(7);
  if (!rest.empty() && rest.back() == '/') rest.pop_back();
  if (rest.empty()) return bad("no host");
  if (rest.find_first_of("/?#@ ") != std::string::npos) {
    return bad("only scheme, host and port are allowed (requests keep their own path)");
  }
  std::string host = rest, port = "80";
  if (rest.front() == '[') {
    size_t close = rest.find(']');
    if (close == std::string::npos) return bad("unterminated IPv6 address");
    host = rest.substr(1, close - 1);
    std::string tail = rest.substr(close + 1);
    if (!tail.empty()) {
      if (tail.front() != ':') return bad("junk after the IPv6 address");
      port = tail.substr(1);
    }
  } else if (size_t colon = rest.rfind(':'); colon != std::string::npos) {
    host = rest.substr(0, colon);
    port = rest.substr(colon + 1);
  }
  if (host.empty()) return bad("no host");
  if (port.empty() || port.size() > 5 ||
      port.find_first_not_of("0123456789") != std::string::npos || std::stoi(port) < 1 ||
      std::stoi(port) > 65535) {
    return bad("bad port");
  }
  up->url = raw.back() == '/' ? raw.substr(0, raw.size() - 1) : raw;
  up->host = host;
  up->port = port;
  up->authority = rest;
  return Status::OK();
}

}  // namespace

// ---- The core and the pools ----------------------------------------------------------------

void UpstreamClient::Impl::Start() {
  work.emplace(io.get_executor());
  for (int i = 0; i < options.threads; ++i) threads.emplace_back([this] { io.run(); });
}

void UpstreamClient::Impl::Shutdown() {
  work.reset();
  io.stop();
  for (auto& t : threads) t.join();
  threads.clear();
  for (auto& up : upstreams) {
    MutexLock lock(&up->mu);
    up->idle.clear();
  }
}

std::unique_ptr<Conn> UpstreamClient::Impl::TakeIdle(Upstream& up) {
  MutexLock lock(&up.mu);
  while (!up.idle.empty()) {
    std::unique_ptr<Conn> c = std::move(up.idle.back());
    up.idle.pop_back();
    if (StillOpen(*c)) return c;
  }
  return nullptr;
}

void UpstreamClient::Impl::PutIdle(Upstream& up, std::unique_ptr<Conn> c) {
  c->stream.expires_never();
  MutexLock lock(&up.mu);
  if (up.idle.size() < options.max_idle_connections_per_upstream) {
    up.idle.push_back(std::move(c));
  }  // else closed here
}

// ---- The client ------------------------------------------------------------------------------

Result<std::unique_ptr<UpstreamClient>> UpstreamClient::Create(UpstreamOptions options) {
  if (options.urls.empty()) return Status::InvalidArgument("no upstream URLs");
  if (options.connect_timeout_ms <= 0 || options.response_timeout_ms <= 0) {
    return Status::InvalidArgument("upstream timeouts must be positive");
  }
  if (options.threads <= 0) return Status::InvalidArgument("upstream threads must be positive");
  auto impl = std::make_shared<Impl>();
  for (const std::string& raw : options.urls) {
    auto up = std::make_unique<Upstream>();
    Status s = ParseUrl(raw, up.get());
    if (!s.ok()) return s;
    impl->upstreams.push_back(std::move(up));
  }
  impl->options = std::move(options);
  impl->Start();
  return std::unique_ptr<UpstreamClient>(new UpstreamClient(std::move(impl)));
}

UpstreamClient::UpstreamClient(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

UpstreamClient::~UpstreamClient() { impl_->Shutdown(); }

size_t UpstreamClient::size() const { return impl_->upstreams.size(); }

size_t UpstreamClient::Pick(const std::string& affinity_key) {
  size_t n = impl_->upstreams.size();
  if (affinity_key.empty()) return impl_->round_robin.fetch_add(1) % n;
  size_t best = 0;
  uint64_t best_score = 0;
  for (size_t i = 0; i < n; ++i) {  // rendezvous: the highest hash of (key, url) wins
    uint64_t score = Fnv1a(affinity_key, impl_->upstreams[i]->url);
    if (i == 0 || score > best_score) {
      best = i;
      best_score = score;
    }
  }
  return best;
}

const std::string& UpstreamClient::url(size_t i) const { return impl_->upstreams.at(i)->url; }

void UpstreamClient::Forward(const http::HttpRequest& req, size_t i, const std::string& auth,
                             std::function<void(http::HttpResponse)> done, Hooks hooks) {
  if (i >= impl_->upstreams.size()) {
    boost::asio::post(impl_->io, [done = std::move(done), i] {
      http::HttpResponse r;
      r.status = 500;
      r.body = internal::ErrorJson("upstream_unknown", "no upstream #" + std::to_string(i));
      done(std::move(r));
    });
    return;
  }
  Upstream& up = *impl_->upstreams[i];
  up.requests.fetch_add(1, std::memory_order_relaxed);
  internal::StartExchange(impl_.get(), &up, req, auth, impl_->TakeIdle(up), std::move(done),
                          std::move(hooks));
}

UpstreamClient::Stats UpstreamClient::stats(size_t i) const {
  const Upstream& up = *impl_->upstreams.at(i);
  Stats s;
  s.requests = up.requests.load(std::memory_order_relaxed);
  s.failures = up.failures.load(std::memory_order_relaxed);
  s.bytes_in = up.bytes_in.load(std::memory_order_relaxed);
  s.connections = up.connections.load(std::memory_order_relaxed);
  return s;
}

}  // namespace switchyard::upstream
