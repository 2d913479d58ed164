// Result<T>: a value or the Status that explains why there is none.
//
// Returned by value across module boundaries (docs/design.md "Style", Errors). Accessing
// the value of an error Result is a programming error and aborts with the status text, so
// bugs surface at the first misuse rather than as garbage downstream.
//
// Thread-safety: like the T it holds.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <type_traits>
#include <utility>

#include "base/status.h"

namespace switchyard {

template <typename T>
class [[nodiscard]] Result {
 public:
  // Implicit from a value or from a non-OK status, so `return value;` and
  // `return Status::NotFound(...)` both read naturally.
  Result(T value) : value_(std::move(value)) {}         // NOLINT(runtime/explicit)
  Result(Status status) : status_(std::move(status)) {  // NOLINT(runtime/explicit)
    if (status_.ok()) status_ = Status::Internal("Result constructed from an OK status");
  }

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }

  const T& value() const& {
    Check();
    return *value_;
  }
  T& value() & {
    Check();
    return *value_;
  }
  T&& value() && {
    Check();
    return std::move(*value_);
  }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

  // The value, or `fallback` on error.
  T value_or(T fallback) const& { return ok() ? *value_ : std::move(fallback); }

 private:
  void Check() const {
    if (!value_) {
      std::fprintf(stderr, "Result::value() on error: %s\n", status_.ToString().c_str());
      std::abort();
    }
  }

  Status status_;
  std::optional<T> value_;
};

}  // namespace switchyard

#define SY_CONCAT_INNER_(a, b) a##b
#define SY_CONCAT_(a, b) SY_CONCAT_INNER_(a, b)

// SY_ASSIGN_OR_RETURN(auto x, MakeX()); binds the value or returns the error Status.
#define SY_ASSIGN_OR_RETURN(lhs, expr) \
  SY_ASSIGN_OR_RETURN_IMPL_(SY_CONCAT_(sy_result_, __LINE__), lhs, expr)
#define SY_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                              \
  if (!tmp.ok()) return tmp.status();             \
  lhs = std::move(tmp).value()
