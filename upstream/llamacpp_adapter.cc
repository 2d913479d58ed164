// The llama.cpp adapter (llama-server). GET /props gives total_slots (else GET /slots, one
// entry per slot); each slot keeps the KV of its last prompt, reused when the next prompt
// shares its prefix. With `slots` declared (`URL#llamacpp+slots`: the server keeps idle
// slots, below), a session pinned to a slot (SessionRef::slot, assigned by the executor)
// has `id_slot` and `cache_prompt: true` on its requests; probed slots alone pin nothing. With slot
// files (declared: the server runs with --slot-save-path) its KV moves as the scheduler decides:
//   wait: keep      nothing
//         demote    POST /slots/{id}?action=save {"filename"}, then ?action=erase (only
//                   when the save succeeded)
//         discard   POST /slots/{id}?action=erase
//   prefetch after demote: ?action=restore of that file; after discard: a warm-up pinned to
//         the slot (it recomputes the prefix there)
//   release:        ?action=erase
// The file is <slot_file_prefix><session>-<hash>.bin in the server's --slot-save-path (one
// per session, overwritten by its next save; llama-server has no endpoint to delete it).
//
// The server this wants: `llama-server -np N --kv-unified --no-cache-idle-slots
// --slot-save-path DIR`. A pinned slot keeps its prompt only while the server leaves idle
// slots alone; under its defaults (no -np: 4 slots, a unified KV cache, --cache-ram and
// --cache-idle-slots on) it moves every idle slot into its RAM prompt cache and empties it
// when another request starts, and a request pinned to an emptied slot is computed anew,
// not loaded from that cache. With -np N alone slots are kept, but the KV is split per slot,
// so an erase frees memory only that slot can use. (llama.cpp 82bb485; bench/RESULTS.md,
// "llama-server slots behind the llamacpp adapter".) Request shapes checked against a real
// server: tests/upstream/llamacpp_server_test.cc.
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <string>

#include "upstream/internal/adapters.h"

namespace switchyard::upstream::internal {
namespace {

using nlohmann::json;

// A file name llama-server accepts: the session key's letters, digits, '-' and '_' (at
// most 48), then a hash of the whole key so different keys never share a file.
std::string SlotFile(const std::string& prefix, const std::string& key) {
  uint64_t hash = 14695981039346656037ull;  // FNV-1a
  std::string name = prefix;
  for (unsigned char c : key) {
    hash = (hash ^ c) * 1099511628211ull;
    if (name.size() - prefix.size() < 48) {
      name += std::isalnum(c) || c == '-' || c == '_' ? static_cast<char>(c) : '_';
    }
  }
  char hex[20];
  std::snprintf(hex, sizeof(hex), "-%016llx", static_cast<unsigned long long>(hash));
  return name + hex + ".bin";
}

UpstreamCall SlotAction(CallKind kind, const SessionRef& s, const char* action, const json& body) {
  return PostCall(kind, "/slots/" + std::to_string(s.slot) + "?action=" + action, body,
                  std::string(action) + " slot " + std::to_string(s.slot) + " of session " + s.key);
}

class LlamaCppAdapter final : public UpstreamAdapter {
 public:
  explicit LlamaCppAdapter(AdapterOptions options) : options_(std::move(options)) {}
  UpstreamKind kind() const override { return UpstreamKind::kLlamaCpp; }

  std::vector<UpstreamCall> ProbeRequests() const override {
    return {ProbeCall("/props"), ProbeCall("/slots")};
  }

  Capabilities ReadProbe(const std::vector<ProbeAnswer>& answers) const override {
    Capabilities caps;
    const json props = ProbeJson(answers, "/props");
    const json slots = ProbeJson(answers, "/slots");
    std::string source;
    if (props.is_object() && props.value("total_slots", json()).is_number_integer() &&
        props["total_slots"].get<int64_t>() > 0) {
      caps.total_slots = props["total_slots"].get<int>();
      source = "GET /props total_slots=" + std::to_string(caps.total_slots);
    } else if (slots.is_array() && !slots.empty()) {
      caps.total_slots = static_cast<int>(slots.size());
      source = "GET /slots (" + std::to_string(caps.total_slots) + " slots)";
    }
    if (caps.total_slots > 0) {
      // Pinning pays only on a server that keeps idle slots (-np N --no-cache-idle-slots),
      // which no endpoint tells: under the defaults a pinned slot is emptied into the RAM
      // prompt cache and its next turn is computed anew (see the top of this file). So
      // slots are counted here, and sessions are pinned only when `slots` is declared.
      caps.slots = {false, source + "; sessions pinned to slots only when `slots` is declared"};
      caps.prefix_caching = {true, source + " (a slot reuses its cached prompt)"};
    }
    return caps;
  }

  void Decorate(const Capabilities& caps, const SessionRef& session, KvAction, int, json* body,
                std::map<std::string, std::string>*) const override {
    if (!caps.slots.on || session.slot < 0) return;
    (*body)["id_slot"] = session.slot;
    (*body)["cache_prompt"] = true;
  }

  std::vector<UpstreamCall> OnWait(const Capabilities& caps, const SessionRef& session,
                                   KvAction decision) const override {
    if (!Files(caps, session) || decision == KvAction::kKeep) return {};
    UpstreamCall erase = SlotAction(CallKind::kErase, session, "erase", json());
    if (decision == KvAction::kDiscard) return {erase};
    erase.needs_previous_ok = true;
    return {FileCall(session, CallKind::kSave, "save"), erase};
  }

  Result<std::vector<UpstreamCall>> OnPrefetch(const Capabilities& caps, const SessionRef& session,
                                               KvAction last,
                                               const WarmupPrefix& prefix) const override {
    if (last == KvAction::kDemote && Files(caps, session)) {
      return std::vector<UpstreamCall>{FileCall(session, CallKind::kRestore, "restore")};
    }
    return WarmupCalls(*this, caps, session, last, prefix);
  }

  std::vector<UpstreamCall> OnRelease(const Capabilities& caps,
                                      const SessionRef& session) const override {
    if (!Files(caps, session)) return {};
    UpstreamCall erase = SlotAction(CallKind::kErase, session, "erase", json());
    erase.background = true;
    return {erase};
  }

 private:
  static bool Files(const Capabilities& caps, const SessionRef& session) {
    return caps.slots.on && caps.slot_files.on && session.slot >= 0;
  }
  // A save or restore of the session's file.
  UpstreamCall FileCall(const SessionRef& session, CallKind kind, const char* action) const {
    return SlotAction(kind, session, action,
                      json{{"filename", SlotFile(options_.slot_file_prefix, session.key)}});
  }

  AdapterOptions options_;
};

}  // namespace

std::unique_ptr<UpstreamAdapter> NewLlamaCppAdapter(const AdapterOptions& options) {
  return std::make_unique<LlamaCppAdapter>(options);
}

}  // namespace switchyard::upstream::internal
