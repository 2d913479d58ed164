// The upstream client's internals (see upstream_client.h), shared by its two files and
// nothing else: the upstreams with their pools of idle keep-alive connections and the
// client's core that owns them with the io_context (upstream_client.cc), and one forwarded
// request, an exchange (upstream_exchange.cc).
//
// Thread-safety: an Upstream's pool is guarded by its mutex, its counters are atomic; a
// connection is used only on its strand, by the exchange that holds it.
#pragma once

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/mutex.h"
#include "http/http.h"
#include "upstream/upstream_client.h"

namespace switchyard::upstream {
namespace internal {

using Strand = boost::asio::strand<boost::asio::io_context::executor_type>;

// One upstream connection; its strand serializes everything done with it.
struct Conn {
  explicit Conn(Strand s) : strand(s), stream(s) {}
  Strand strand;
  boost::beast::tcp_stream stream;
  boost::beast::flat_buffer buffer;
};

struct Upstream {
  std::string url;        // as given, without a trailing '/'
  std::string host;       // for the resolver (no brackets)
  std::string port;       // "80" when absent
  std::string authority;  // the Host header
  Mutex mu;
  std::vector<std::unique_ptr<Conn>> idle GUARDED_BY(mu);  // guarded by mu; most recent last
  std::atomic<uint64_t> requests{0}, failures{0}, bytes_in{0}, connections{0};
};

std::string Lower(std::string_view s);
// An OpenAI-shaped error body of type "upstream_error".
std::string ErrorJson(std::string_view code, std::string_view message);

}  // namespace internal

// The client's shared core: the upstreams, the io_context and its threads. Held by the
// UpstreamClient; streams' cancel callbacks hold it weakly (they may run after the client).
struct UpstreamClient::Impl : std::enable_shared_from_this<UpstreamClient::Impl> {
  UpstreamOptions options;
  std::vector<std::unique_ptr<internal::Upstream>> upstreams;  // declared before io: outlives it
  std::atomic<uint64_t> round_robin{0};
  boost::asio::io_context io;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work;
  std::vector<std::thread> threads;

  void Start();
  // Stops the threads and closes the idle connections; requests in flight are answered
  // when `io` is destroyed (with their handlers).
  void Shutdown();
  // An idle connection that is still open, or nullptr.
  std::unique_ptr<internal::Conn> TakeIdle(internal::Upstream& up);
  // Back to the pool once its answer was read whole (closed when the pool is full).
  void PutIdle(internal::Upstream& up, std::unique_ptr<internal::Conn> c);
};

namespace internal {

// Forwards `req` to `up` over `pooled` (an idle connection, or nullptr for a new one):
// one exchange, owned by its pending handlers (see UpstreamClient::Forward).
void StartExchange(UpstreamClient::Impl* core, Upstream* up, const http::HttpRequest& req,
                   const std::string& auth, std::unique_ptr<Conn> pooled,
                   std::function<void(http::HttpResponse)> done, UpstreamClient::Hooks hooks);

}  // namespace internal
}  // namespace switchyard::upstream
