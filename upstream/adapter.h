// UpstreamAdapter: turns the scheduler's KV decisions for a session into what one kind of
// upstream engine accepts, in proxy mode.
//
// During a session's tool wait the scheduler keeps its KV (GPU memory), demotes it (host
// memory), discards it (recompute later) or, before the tool is predicted to return,
// prefetches it back. An adapter says what that means on the wire for its engine: fields
// added to each forwarded request (Decorate) and requests of their own (UpstreamCall) to
// send when a wait starts (OnWait), at the predicted return minus the reload time
// (OnPrefetch) and when the session ends (OnRelease). Adapters are pure: they produce data
// and send nothing; the Steering executor (steering.h) sends their calls, so contract tests
// compare exactly what goes on the wire.
//
// Capabilities. An adapter never emits a field or endpoint its upstream did not advertise:
// every decision method takes the upstream's Capabilities, and each flag is false until a
// probe (ProbeRequests, then ReadProbe on the answers) or the operator (a declared
// Capabilities, ApplyDeclared) says otherwise. What a GET cannot show is declared:
//   - vLLM: `session_id` and request `priority` (the latter needs
//     `--scheduling-policy priority`, else vLLM refuses a request carrying one), and the
//     offload controls when the connector was set with --kv-transfer-config rather than
//     --kv-offloading-size;
//   - SGLang: that sessions must be opened with /open_session (builds without the session
//     radix cache);
//   - llama.cpp: slot save/restore/erase, which need `--slot-save-path` (no endpoint shows it);
//   - generic: everything (prefix caching, for warm-ups).
//
// Priority. Decorate's `priority` is Switchyard's: larger is more urgent, 0 a standard
// call. Each adapter maps it to its engine's order (vLLM serves lower values first;
// SGLang higher ones unless --schedule-low-priority-values-first).
//
// Adapters are registered by kind in the AdapterRegistry (built-in ones on first use of
// Global()); callers create them by UpstreamKind, never by comparing names.
//
// Ownership: Create returns the adapter (std::unique_ptr). Thread-safety: adapters are
// immutable; every method is const and may be called from any thread. The registry is
// thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/mutex.h"
#include "base/result.h"
#include "upstream/warmup.h"

namespace switchyard::upstream {

enum class UpstreamKind { kGeneric, kVllm, kSglang, kLlamaCpp };

// "generic", "vllm", "sglang" or "llamacpp"; InvalidArgument naming the value and the choices.
Result<UpstreamKind> ParseUpstreamKind(std::string_view name);
std::string_view UpstreamKindName(UpstreamKind kind);

// One thing an upstream may accept, and where that was learned ("" while nobody said:
// e.g. "GET /props total_slots=4", "configured").
struct Capability {
  bool on = false;
  std::string source;
};

// What an upstream advertised. Every flag is off until a probe or the operator says so.
struct Capabilities {
  Capability prefix_caching;      // reuses a cached prompt prefix: warm-ups are useful
  Capability session_id;          // body `session_id` (vLLM also the X-Session-ID header)
  Capability priority;            // body `priority`
  Capability kv_transfer_params;  // vLLM offload controls (max_offload_tokens, kv_load_tiers, ..)
  Capability open_session;        // SGLang: POST /open_session before a session's first call
  Capability close_session;       // SGLang: POST /close_session frees the session's KV
  Capability slots;               // llama.cpp: `id_slot` pins a session to a slot
  Capability slot_files;          // llama.cpp: POST /slots/{id}?action=save|restore|erase
  // vLLM: body `return_token_ids` (its answers then carry prompt_token_ids and token_ids),
  // which proxy mode matches against the upstream's KV events (kv_events.h); declared.
  Capability token_ids;
  int total_slots = 0;  // llama.cpp: number of slots (with `slots`)
  // SGLang: the engine serves lower `priority` values first (its
  // --schedule-low-priority-values-first); vLLM always does, whatever this says.
  bool priority_low_first = false;
};

// `probed` with every flag the operator declared (a non-empty source) replaced by the
// declared one, on or off; total_slots and priority_low_first likewise when declared
// (non-zero slots; the order when `priority` is declared).
Capabilities ApplyDeclared(Capabilities probed, const Capabilities& declared);
// Declares one capability as the operator wrote it: a flag's name ("priority",
// "slot_files", ...) turns it on, "no-<name>" off, "slots=N" sets the slot count (and
// `slots` on), "priority_low_first" the SGLang order; the source is "configured".
// InvalidArgument listing the names otherwise.
Status DeclareCapability(std::string_view word, Capabilities* caps);
// For /v1/cluster: {"prefix_caching":{"on":true,"source":"..."},...,"total_slots":4}.
nlohmann::json CapabilitiesToJson(const Capabilities& caps);

// The scheduler's choice for a waiting session's KV.
enum class KvAction { kKeep, kDemote, kDiscard };
std::string_view KvActionName(KvAction action);

// A session as an upstream knows it.
struct SessionRef {
  std::string key;      // Switchyard's session key (e.g. tenant and session id)
  size_t upstream = 0;  // index in the UpstreamClient
  int slot = -1;        // llama.cpp: the slot it is pinned to; -1 when none
};

// One answer of a probe: status 0 when the upstream could not be reached.
struct ProbeAnswer {
  std::string path;
  int status = 0;
  std::string body;
};

struct AdapterOptions {
  // llama.cpp: slot files are named <prefix><session>-<hash>.bin inside the server's
  // --slot-save-path (llama-server refuses a name with a directory in it).
  std::string slot_file_prefix = "switchyard-";
  // SGLang: capacity_of_str_len of /open_session.
  int64_t session_capacity_chars = int64_t{1} << 20;
};

// See the header comment.
class UpstreamAdapter {
 public:
  virtual ~UpstreamAdapter() = default;
  virtual UpstreamKind kind() const = 0;

  // The GETs whose answers ReadProbe reads (none for generic).
  virtual std::vector<UpstreamCall> ProbeRequests() const = 0;
  // Capabilities from the probes' answers; a missing answer, a 404 or a body that does not
  // say so leaves a flag off.
  virtual Capabilities ReadProbe(const std::vector<ProbeAnswer>& answers) const = 0;

  // Adds to a request forwarded for `session` what its engine takes: session identity,
  // priority, and the KV controls that follow `last_decision` (the decision of the wait
  // that just ended). `headers` are lower-case.
  virtual void Decorate(const Capabilities& caps, const SessionRef& session, KvAction last_decision,
                        int priority, nlohmann::json* body,
                        std::map<std::string, std::string>* headers) const = 0;
  // Before the session's first forwarded request.
  virtual std::vector<UpstreamCall> OnOpen(const Capabilities& caps,
                                           const SessionRef& session) const {
    return {};
  }
  // When the session's wait starts, with the scheduler's decision.
  // (None by default: the decision travels in the next turn's request.)
  virtual std::vector<UpstreamCall> OnWait(const Capabilities& caps, const SessionRef& session,
                                           KvAction decision) const {
    return {};
  }
  // Brings the session's KV back after `last_decision`: a restore, or a warm-up of
  // `prefix` (none after kKeep, or when the upstream caches no prefix). An error names
  // what in `prefix` cannot be warmed (MakeWarmup).
  virtual Result<std::vector<UpstreamCall>> OnPrefetch(const Capabilities& caps,
                                                       const SessionRef& session,
                                                       KvAction last_decision,
                                                       const WarmupPrefix& prefix) const = 0;
  // The session ended: what frees its KV upstream.
  // (None by default.)
  virtual std::vector<UpstreamCall> OnRelease(const Capabilities& caps,
                                              const SessionRef& session) const {
    return {};
  }
};

using AdapterFactory = std::function<std::unique_ptr<UpstreamAdapter>(const AdapterOptions&)>;

// Adapters by kind. Built-in ones (all four kinds) are registered on first use of Global().
class AdapterRegistry {
 public:
  static AdapterRegistry& Global();
  // AlreadyExists when `kind` has a factory.
  Status Register(UpstreamKind kind, AdapterFactory factory);
  // NotFound naming the kind when none is registered.
  Result<std::unique_ptr<UpstreamAdapter>> Create(UpstreamKind kind,
                                                  const AdapterOptions& options = {}) const;

 private:
  mutable Mutex mu_;
  std::map<UpstreamKind, AdapterFactory> factories_ GUARDED_BY(mu_);
};

}  // namespace switchyard::upstream
