// Internals shared by the etcd client and its watch: the JSON of the v3 gateway (int64s
// arrive as strings, keys and values base64) and one synchronous network step bounded by
// a deadline on a private io_context.
//
// Thread-safety: free functions over their arguments only.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/error.hpp>
#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "base/result.h"
#include "base/status.h"
#include "cluster/etcd_client.h"

namespace switchyard::cluster::internal {

using Deadline = std::chrono::steady_clock::time_point;

// An int64 field that protobuf's JSON mapping writes as a string ("42") or a number; 0
// when absent.
Result<int64_t> Int64Field(const nlohmann::json& obj, const char* name);

// One mvccpb.KeyValue object (base64 key and value decoded).
Result<EtcdKeyValue> ParseKeyValue(const nlohmann::json& kv);

// A status for an answer etcd refused: `where` ("etcd http://h:p /v3/kv/put"), the HTTP
// status and etcd's message, with etcd's gRPC code mapped to ours.
Status EtcdError(const std::string& where, int http_status, std::string_view body);

// A status for a transport failure (connect, write, read, timeout): Unavailable, scope
// peer (retryable), naming `where` and what failed.
Status TransportError(const std::string& where, std::string_view step,
                      const boost::beast::error_code& ec, bool timed_out);

// Starts one asynchronous operation with `start(handler)` and runs `ioc` until it has
// completed or `deadline` has passed; on the deadline `cancel()` aborts it (closing the
// socket) and *timed_out is set. Returns the operation's error code.
template <typename Start, typename Cancel>
boost::beast::error_code RunStep(boost::asio::io_context& ioc, Deadline deadline, Start start,
                                 Cancel cancel, bool* timed_out) {
  bool done = false;
  boost::beast::error_code result;
  start([&](boost::beast::error_code ec, auto&&...) {
    result = ec;
    done = true;
  });
  ioc.restart();
  ioc.run_until(deadline);
  if (!done) {
    *timed_out = true;
    cancel();
    ioc.restart();
    ioc.run();
  }
  return result;
}

// Resolves `ep` and connects `socket` to it, then writes one JSON POST of `body` to `path`,
// each step bounded by `deadline` on `ioc` (a timed-out step closes the socket). Errors
// are TransportError naming `where` and the step (resolve, connect, write).
Status ConnectAndPost(boost::asio::io_context& ioc, boost::asio::ip::tcp::socket& socket,
                      const EtcdEndpoint& ep, std::string_view path, const std::string& body,
                      Deadline deadline, const std::string& where);

}  // namespace switchyard::cluster::internal
