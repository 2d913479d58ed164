// UpstreamCall: one request an upstream adapter (adapter.h) asks the executor
// (steering.h) to send — a probe, a session open or close, a llama.cpp slot save, restore
// or erase, a warm-up. A value: it says what goes on the wire and nothing else.
//
// Thread-safety: a value type.
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace switchyard::upstream {

enum class CallKind { kProbe, kOpen, kClose, kSave, kRestore, kErase, kWarmup };
std::string_view CallKindName(CallKind kind);

struct UpstreamCall {
  CallKind kind = CallKind::kProbe;
  std::string method;                          // "GET", "POST"
  std::string path;                            // path and query, e.g. "/slots/0?action=save"
  std::string body;                            // JSON; "" for none
  std::map<std::string, std::string> headers;  // lower-case names, beside Content-Type
  // The session's next turn need not wait for it (a warm-up, a release).
  bool background = false;
  // Sent only when the session's call before it succeeded (an erase after its save: a
  // failed save must not lose the KV); skipped otherwise.
  bool needs_previous_ok = false;
  std::string purpose;  // for logs and errors, e.g. "save slot 0 of session s1"
};

}  // namespace switchyard::upstream
