// Status: the one error vocabulary of Switchyard.
//
// Every fallible call that crosses a module boundary returns a Status (or a Result<T>, see
// result.h) by value. A Status carries a code, a message naming what is wrong and where,
// whether retrying the same operation may succeed (retryable), and the scope of the
// failure (a request, a transfer, a link, a peer, a tier, the whole process), in the
// spirit of RocksDB's IOStatus. Exceptions never cross module boundaries: they are caught
// and converted at the edges (HTTP handlers, third-party callbacks).
//
// Thread-safety: a Status is an immutable value; copies may be used from any thread.
#pragma once

#include <memory>
#include <ostream>
#include <string>
#include <string_view>

namespace switchyard {

// What went wrong. Mirrors the canonical gRPC/absl codes plus NotSupported.
enum class StatusCode : int {
  kOk = 0,
  kCancelled,
  kInvalidArgument,
  kDeadlineExceeded,
  kNotFound,
  kAlreadyExists,
  kPermissionDenied,
  kResourceExhausted,
  kFailedPrecondition,
  kAborted,
  kOutOfRange,
  kNotSupported,
  kInternal,
  kUnavailable,
  kDataLoss,
  kUnauthenticated,
};

// How far a failure reaches; drives the failure sequence of docs/design.md invariant 5.
enum class ErrorScope : int {
  kNone = 0,  // no particular scope (e.g. a bad argument)
  kRequest,   // one request / node
  kTransfer,  // one transfer
  kBlock,     // one KV block
  kLink,      // one network link
  kRemote,    // a whole remote process or its host (an engine worker, a KV store, etcd)
  kTier,      // a storage tier (hbm, host, disk)
  kProcess,   // this process
};

std::string_view StatusCodeName(StatusCode code);
std::string_view ErrorScopeName(ErrorScope scope);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message, bool retryable = false,
         ErrorScope scope = ErrorScope::kNone);

  static Status OK() { return Status(); }
  static Status Cancelled(std::string msg) { return {StatusCode::kCancelled, std::move(msg)}; }
  static Status InvalidArgument(std::string msg) {
    return {StatusCode::kInvalidArgument, std::move(msg)};
  }
  static Status DeadlineExceeded(std::string msg) {
    return {StatusCode::kDeadlineExceeded, std::move(msg)};
  }
  static Status NotFound(std::string msg) { return {StatusCode::kNotFound, std::move(msg)}; }
  static Status AlreadyExists(std::string msg) {
    return {StatusCode::kAlreadyExists, std::move(msg)};
  }
  static Status PermissionDenied(std::string msg) {
    return {StatusCode::kPermissionDenied, std::move(msg)};
  }
  // Out of capacity, quota or credit: retryable once resources free up.
  static Status ResourceExhausted(std::string msg) {
    return {StatusCode::kResourceExhausted, std::move(msg), /*retryable=*/true};
  }
  static Status FailedPrecondition(std::string msg) {
    return {StatusCode::kFailedPrecondition, std::move(msg)};
  }
  static Status Aborted(std::string msg) { return {StatusCode::kAborted, std::move(msg)}; }
  static Status OutOfRange(std::string msg) { return {StatusCode::kOutOfRange, std::move(msg)}; }
  static Status NotSupported(std::string msg) {
    return {StatusCode::kNotSupported, std::move(msg)};
  }
  static Status Internal(std::string msg) { return {StatusCode::kInternal, std::move(msg)}; }
  // A transient failure of a dependency (peer, link, device): retryable by default.
  static Status Unavailable(std::string msg, ErrorScope scope = ErrorScope::kNone) {
    return {StatusCode::kUnavailable, std::move(msg), /*retryable=*/true, scope};
  }
  static Status DataLoss(std::string msg, ErrorScope scope = ErrorScope::kNone) {
    return {StatusCode::kDataLoss, std::move(msg), /*retryable=*/false, scope};
  }
  static Status Unauthenticated(std::string msg) {
    return {StatusCode::kUnauthenticated, std::move(msg)};
  }

  bool ok() const { return state_ == nullptr; }
  StatusCode code() const { return state_ ? state_->code : StatusCode::kOk; }
  const std::string& message() const;
  bool IsRetryable() const { return state_ && state_->retryable; }
  ErrorScope scope() const { return state_ ? state_->scope : ErrorScope::kNone; }

  bool IsNotFound() const { return code() == StatusCode::kNotFound; }
  bool IsInvalidArgument() const { return code() == StatusCode::kInvalidArgument; }
  bool IsResourceExhausted() const { return code() == StatusCode::kResourceExhausted; }
  bool IsFailedPrecondition() const { return code() == StatusCode::kFailedPrecondition; }
  bool IsCancelled() const { return code() == StatusCode::kCancelled; }
  bool IsDataLoss() const { return code() == StatusCode::kDataLoss; }
  bool IsUnavailable() const { return code() == StatusCode::kUnavailable; }
  bool IsNotSupported() const { return code() == StatusCode::kNotSupported; }

  // Copies with a changed flag or scope; the original is untouched.
  Status WithRetryable(bool retryable) const;
  Status WithScope(ErrorScope scope) const;
  // Prefixes the message with context ("while loading topology: ...").
  Status Annotate(std::string_view context) const;

  // "InvalidArgument: node 'b' depends on unknown node 'x' [retryable, scope=transfer]"
  std::string ToString() const;

  friend bool operator==(const Status& a, const Status& b) {
    return a.code() == b.code() && a.message() == b.message();
  }

 private:
  struct State {
    StatusCode code;
    std::string message;
    bool retryable;
    ErrorScope scope;
  };
  // Null when OK so that the common path is a single pointer test and copy.
  std::shared_ptr<const State> state_;
};

std::ostream& operator<<(std::ostream& os, const Status& s);

}  // namespace switchyard

// Returns from the enclosing function if `expr` yields a non-OK Status.
#define SY_RETURN_IF_ERROR(expr)              \
  do {                                        \
    ::switchyard::Status sy_status_ = (expr); \
    if (!sy_status_.ok()) return sy_status_;  \
  } while (0)
