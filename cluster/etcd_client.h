// EtcdClient: a small client of etcd's v3 API through its JSON gateway (HTTP/1.1 + JSON,
// keys and values base64-encoded), over Boost.Beast. It covers what cluster membership
// needs: leases (grant, keep-alive, revoke), put, range over a prefix, delete, and a watch
// over a prefix that streams put/delete events.
//
// Every call is synchronous, opens its own connection and is bounded by
// EtcdOptions::timeout (connect, write and read together). Errors are Status values whose
// message names the endpoint, the gateway path, the HTTP status and etcd's own message
// ("etcd http://127.0.0.1:2379 /v3/kv/put: HTTP 404: etcdserver: requested lease not
// found"). An unreachable endpoint is Unavailable (retryable, scope remote); an answer etcd
// refused keeps etcd's gRPC code where it maps (NotFound for a missing lease, ...).
//
// Only http:// endpoints: https is refused with InvalidArgument (no TLS here; put a local
// TLS-terminating proxy in front of etcd where one is needed).
//
// Ownership and thread-safety: an EtcdClient holds only its endpoint and options; all its
// methods may be called from any thread at once. An EtcdWatch owns one thread and one
// connection; see below.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "base/status.h"

namespace switchyard::cluster {

// A parsed "http://host:port" endpoint. The port is required (etcd has no default that
// would be safe to assume).
struct EtcdEndpoint {
  std::string url;   // as given, without a trailing '/'
  std::string host;  // without brackets for IPv6
  std::string port;
  std::string authority;  // the Host header: host:port as written
};
Result<EtcdEndpoint> ParseEtcdUrl(std::string_view url);

struct EtcdOptions {
  std::chrono::milliseconds timeout{3000};  // one call, connect to last byte
};

// One key as etcd returns it.
struct EtcdKeyValue {
  std::string key;
  std::string value;
  int64_t create_revision = 0;
  int64_t mod_revision = 0;
  int64_t version = 0;
  int64_t lease = 0;  // 0: none
};

struct EtcdRange {
  std::vector<EtcdKeyValue> kvs;
  int64_t revision = 0;  // the store's revision when the range was read
};

struct EtcdLease {
  int64_t id = 0;
  int64_t ttl_seconds = 0;  // as granted (etcd may raise a TTL below its minimum)
};

struct EtcdWatchEvent {
  enum class Type { kPut, kDelete };
  Type type = Type::kPut;
  EtcdKeyValue kv;  // for a delete: key and mod_revision only
};

class EtcdWatch;

class EtcdClient {
 public:
  // Validates the URL; does not connect.
  static Result<std::shared_ptr<EtcdClient>> Create(std::string_view url, EtcdOptions options = {});

  const EtcdEndpoint& endpoint() const { return endpoint_; }

  Result<EtcdLease> LeaseGrant(int64_t ttl_seconds) const;
  // Renews the lease; returns its remaining TTL in seconds. NotFound once it has expired
  // or been revoked.
  Result<int64_t> LeaseKeepAlive(int64_t lease) const;
  // Revokes the lease: every key attached to it is deleted at once.
  Status LeaseRevoke(int64_t lease) const;
  // Writes key = value, attached to `lease` when non-zero. Returns the new revision.
  Result<int64_t> Put(std::string_view key, std::string_view value, int64_t lease = 0) const;
  // Every key that starts with `prefix` (an empty prefix: every key), in key order.
  Result<EtcdRange> Range(std::string_view prefix) const;
  // Deletes one key; returns how many keys were deleted (0 or 1).
  Result<int64_t> Delete(std::string_view key) const;

  // Watches every key under `prefix` from `from_revision` (0: from now). Returns once
  // etcd has confirmed the watch; `on_events` then runs on the watch's own thread for each
  // batch of events (one revision each), in revision order, until the watch is stopped or
  // fails; `on_end` runs once on that thread when the stream ends for any reason other
  // than Stop() (etcd gone, the revision compacted away: OutOfRange).
  using EventsCallback = std::function<void(const std::vector<EtcdWatchEvent>&)>;
  using EndCallback = std::function<void(const Status&)>;
  Result<std::unique_ptr<EtcdWatch>> Watch(std::string_view prefix, int64_t from_revision,
                                           EventsCallback on_events, EndCallback on_end) const;

  // One POST to the gateway: the parsed JSON answer as text, or the error (for the
  // implementation and the watch; exposed so that tests can reach other paths).
  Result<std::string> Post(std::string_view path, const std::string& body) const;

 private:
  EtcdClient(EtcdEndpoint endpoint, EtcdOptions options)
      : endpoint_(std::move(endpoint)), options_(options) {}
  EtcdEndpoint endpoint_;
  EtcdOptions options_;
};

// A running watch. Stop() (or the destructor) closes its connection and joins its thread;
// after it returns no callback runs. Stop() must not be called from a callback.
class EtcdWatch {
 public:
  virtual ~EtcdWatch() = default;
  virtual void Stop() = 0;
};

// The smallest key greater than every key starting with `prefix` (etcd's range_end for a
// prefix): the prefix with its last byte below 0xff incremented and the rest dropped;
// "\0" (every key) when there is none.
std::string PrefixRangeEnd(std::string_view prefix);

std::string Base64Encode(std::string_view bytes);
Result<std::string> Base64Decode(std::string_view text);

}  // namespace switchyard::cluster
