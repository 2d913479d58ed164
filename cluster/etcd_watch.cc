// EtcdClient::Watch: one POST /v3/watch whose chunked answer is a stream of JSON objects
// ({"result":{"created":true}}, then {"result":{"events":[...]}} per change). The
// connection is set up under the call's deadline; then a thread reads the stream with
// blocking reads, which Stop() interrupts by shutting the socket down.
#include <sys/socket.h>

#include <atomic>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <limits>
#include <optional>
#include <thread>

#include "base/logging.h"
#include "base/mutex.h"
#include "base/thread_name.h"
#include "cluster/etcd_client.h"
#include "cluster/internal/etcd_wire.h"

namespace switchyard::cluster {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using json = nlohmann::json;

class StreamWatch : public EtcdWatch {
 public:
  StreamWatch(std::string where, EtcdClient::EventsCallback on_events,
              EtcdClient::EndCallback on_end)
      : where_(std::move(where)), on_events_(std::move(on_events)), on_end_(std::move(on_end)) {}
  ~StreamWatch() override { Stop(); }

  // Connects, sends the request and waits (until `deadline`) for etcd's confirmation.
  Status Open(const EtcdEndpoint& ep, const std::string& body, internal::Deadline deadline);

  void Stop() override {
    if (stopped_.exchange(true)) return;
    stopping_.store(true);
    if (socket_.is_open()) ::shutdown(socket_.native_handle(), SHUT_RDWR);
    if (thread_.joinable()) thread_.join();
  }

 private:
  void Run();
  Status ReadStream();
  Status ReadErrorBody(http::response_parser<http::buffer_body>& p, int status);
  Status Feed(const char* data, size_t n);
  Status Handle(std::string_view text);
  void End(const Status& s);

  const std::string where_;
  EtcdClient::EventsCallback on_events_;
  EtcdClient::EndCallback on_end_;
  asio::io_context ioc_;
  tcp::socket socket_{ioc_};
  beast::flat_buffer buffer_;
  std::string pending_;  // bytes of a JSON object not complete yet
  std::thread thread_;
  std::atomic<bool> stopping_{false}, stopped_{false};
  Mutex mu_;
  CondVar cv_;
  bool created_ GUARDED_BY(mu_) = false;                // guarded by mu_
  std::optional<Status> open_failure_ GUARDED_BY(mu_);  // guarded by mu_
};

Status StreamWatch::Open(const EtcdEndpoint& ep, const std::string& body,
                         internal::Deadline deadline) {
  SY_RETURN_IF_ERROR(
      internal::ConnectAndPost(ioc_, socket_, ep, "/v3/watch", body, deadline, where_));
  thread_ = std::thread([this] { Run(); });
  MutexLock lock(&mu_);
  while (!created_ && !open_failure_ && cv_.WaitUntil(&mu_, deadline)) {
  }
  if (!created_ && !open_failure_) {
    lock.Unlock();
    Stop();
    return internal::TransportError(where_, "watch creation", {}, /*timed_out=*/true);
  }
  if (open_failure_) {
    Status failure = *open_failure_;
    lock.Unlock();
    Stop();
    return failure;
  }
  return Status::OK();
}

void StreamWatch::Run() {
  SetThreadName("sy-etcd-watch");
  Status end;
  try {
    end = ReadStream();
  } catch (const std::exception& e) {
    end = Status::Internal(where_ + ": watch callback threw: " + e.what());
  }
  End(end);
}

void StreamWatch::End(const Status& s) {
  if (stopping_.load()) return;
  {
    MutexLock lock(&mu_);
    if (!created_) {
      open_failure_ = s;
      cv_.SignalAll();
      return;
    }
  }
  if (on_end_) on_end_(s);
}

Status StreamWatch::ReadStream() {
  http::response_parser<http::buffer_body> p;
  p.body_limit(std::numeric_limits<std::uint64_t>::max());
  beast::error_code ec;
  http::read_header(socket_, buffer_, p, ec);
  if (ec) return internal::TransportError(where_, "read", ec, false);
  int status = static_cast<int>(p.get().result_int());
  if (status != 200) return ReadErrorBody(p, status);
  char chunk[16 * 1024];
  while (!p.is_done()) {
    p.get().body().data = chunk;
    p.get().body().size = sizeof(chunk);
    http::read_some(socket_, buffer_, p, ec);
    if (ec == http::error::need_buffer) ec = {};
    if (ec) return internal::TransportError(where_, "read", ec, false);
    SY_RETURN_IF_ERROR(Feed(chunk, sizeof(chunk) - p.get().body().size));
  }
  return Status::Unavailable(where_ + ": the watch stream ended", ErrorScope::kRemote);
}

Status StreamWatch::ReadErrorBody(http::response_parser<http::buffer_body>& p, int status) {
  std::string body;
  char chunk[4096];
  beast::error_code ec;
  while (!p.is_done() && body.size() < 64 * 1024) {
    p.get().body().data = chunk;
    p.get().body().size = sizeof(chunk);
    http::read_some(socket_, buffer_, p, ec);
    if (ec == http::error::need_buffer) ec = {};
    if (ec) break;
    body.append(chunk, sizeof(chunk) - p.get().body().size);
  }
  return internal::EtcdError(where_, status, body);
}

// Splits the stream into top-level JSON objects (strings and escapes respected).
Status StreamWatch::Feed(const char* data, size_t n) {
  pending_.append(data, n);
  size_t consumed = 0, begin = 0;
  int depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = 0; i < pending_.size(); ++i) {
    char c = pending_[i];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{') {
      if (depth++ == 0) begin = i;
    } else if (c == '}' && depth > 0 && --depth == 0) {
      SY_RETURN_IF_ERROR(Handle(std::string_view(pending_).substr(begin, i + 1 - begin)));
      consumed = i + 1;
    }
  }
  pending_.erase(0, consumed);
  return Status::OK();
}

Status StreamWatch::Handle(std::string_view text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return Status::DataLoss(where_ + ": a watch message is not JSON");
  if (j.contains("error")) return internal::EtcdError(where_, 200, text);
  const json& r = j.value("result", json::object());
  if (r.value("created", false)) {
    MutexLock lock(&mu_);
    created_ = true;
    cv_.SignalAll();
  }
  if (r.value("canceled", false)) {
    Result<int64_t> compact = internal::Int64Field(r, "compact_revision");
    if (compact.ok() && *compact > 0) {
      return Status::OutOfRange(where_ + ": the start revision was compacted (oldest kept: " +
                                std::to_string(*compact) + ")");
    }
    return Status::Aborted(where_ + ": etcd cancelled the watch: " +
                           r.value("cancel_reason", std::string("no reason given")));
  }
  std::vector<EtcdWatchEvent> events;
  if (auto it = r.find("events"); it != r.end() && it->is_array()) {
    for (const json& e : *it) {
      EtcdWatchEvent ev;
      ev.type = e.value("type", std::string()) == "DELETE" ? EtcdWatchEvent::Type::kDelete
                                                           : EtcdWatchEvent::Type::kPut;
      Result<EtcdKeyValue> kv = internal::ParseKeyValue(e.value("kv", json::object()));
      if (!kv.ok()) return kv.status().Annotate(where_);
      ev.kv = std::move(*kv);
      events.push_back(std::move(ev));
    }
  }
  if (!events.empty() && on_events_ && !stopping_.load()) on_events_(events);
  return Status::OK();
}

}  // namespace

Result<std::unique_ptr<EtcdWatch>> EtcdClient::Watch(std::string_view prefix, int64_t from_revision,
                                                     EventsCallback on_events,
                                                     EndCallback on_end) const {
  json create{{"key", Base64Encode(prefix.empty() ? std::string_view("\0", 1) : prefix)},
              {"range_end", Base64Encode(PrefixRangeEnd(prefix))}};
  if (from_revision > 0) create["start_revision"] = std::to_string(from_revision);
  auto watch = std::make_unique<StreamWatch>("etcd " + endpoint_.url + " /v3/watch",
                                             std::move(on_events), std::move(on_end));
  Status s = watch->Open(endpoint_, json{{"create_request", create}}.dump(),
                         std::chrono::steady_clock::now() + options_.timeout);
  if (!s.ok()) return s;
  return std::unique_ptr<EtcdWatch>(std::move(watch));
}

}  // namespace switchyard::cluster
