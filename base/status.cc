#include "base/status.h"

namespace switchyard {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "OK";
    case StatusCode::kCancelled:
      return "Cancelled";
    case StatusCode::kInvalidArgument:
      return "InvalidArgument";
    case StatusCode::kDeadlineExceeded:
      return "DeadlineExceeded";
    case StatusCode::kNotFound:
      return "NotFound";
    case StatusCode::kAlreadyExists:
      return "AlreadyExists";
    case StatusCode::kPermissionDenied:
      return "PermissionDenied";
    case StatusCode::kResourceExhausted:
      return "ResourceExhausted";
    case StatusCode::kFailedPrecondition:
      return "FailedPrecondition";
    case StatusCode::kAborted:
      return "Aborted";
    case StatusCode::kOutOfRange:
      return "OutOfRange";
    case StatusCode::kNotSupported:
      return "NotSupported";
    case StatusCode::kInternal:
      return "Internal";
    case StatusCode::kUnavailable:
      return "Unavailable";
    case StatusCode::kDataLoss:
      return "DataLoss";
    case StatusCode::kUnauthenticated:
      return "Unauthenticated";
  }
  return "Unknown";
}

std::string_view ErrorScopeName(ErrorScope scope) {
  switch (scope) {
    case ErrorScope::kNone:
      return "none";
    case ErrorScope::kRequest:
      return "request";
    case ErrorScope::kTransfer:
      return "transfer";
    case ErrorScope::kBlock:
      return "block";
    case ErrorScope::kLink:
      return "link";
    case ErrorScope::kRemote:
      return "remote";
    case ErrorScope::kTier:
      return "tier";
    case ErrorScope::kProcess:
      return "process";
  }
  return "unknown";
}

Status::Status(StatusCode code, std::string message, bool retryable, ErrorScope scope) {
  if (code != StatusCode::kOk) {
    state_ = std::make_shared<const State>(State{code, std::move(message), retryable, scope});
  }
}

const std::string& Status::message() const {
  static const std::string kEmpty;
  return state_ ? state_->message : kEmpty;
}

Status Status::WithRetryable(bool retryable) const {
  if (ok()) return *this;
  return Status(code(), message(), retryable, scope());
}

Status Status::WithScope(ErrorScope new_scope) const {
  if (ok()) return *this;
  return Status(code(), message(), IsRetryable(), new_scope);
}

Status Status::Annotate(std::string_view context) const {
  if (ok()) return *this;
  std::string msg(context);
  msg += ": ";
  msg += message();
  return Status(code(), std::move(msg), IsRetryable(), scope());
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string out(StatusCodeName(code()));
  out += ": ";
  out += message();
  if (IsRetryable() || scope() != ErrorScope::kNone) {
    out += " [";
    if (IsRetryable()) out += "retryable";
    if (scope() != ErrorScope::kNone) {
      if (IsRetryable()) out += ", ";
      out += "scope=";
      out += ErrorScopeName(scope());
    }
    out += "]";
  }
  return out;
}

std::ostream& operator<<(std::ostream& os, const Status& s) { return os << s.ToString(); }

}  // namespace switchyard
