#include "upstream/adapter.h"

#include <charconv>
#include <string>
#include <utility>

#include "upstream/internal/adapters.h"

namespace switchyard::upstream {
namespace {

constexpr std::pair<UpstreamKind, std::string_view> kKindNames[] = {
    {UpstreamKind::kGeneric, "generic"},
    {UpstreamKind::kVllm, "vllm"},
    {UpstreamKind::kSglang, "sglang"},
    {UpstreamKind::kLlamaCpp, "llamacpp"},
};

void Declare(Capability* probed, const Capability& declared) {
  if (!declared.source.empty()) *probed = declared;
}

nlohmann::json ToJson(const Capability& c) {
  return nlohmann::json{{"on", c.on}, {"source", c.source}};
}

}  // namespace

Result<UpstreamKind> ParseUpstreamKind(std::string_view name) {
  std::string choices;
  for (const auto& [kind, kind_name] : kKindNames) {
    if (name == kind_name) return kind;
    choices += choices.empty() ? "" : "|";
    choices += kind_name;
  }
  return Status::InvalidArgument("upstream kind \"" + std::string(name) + "\" is not one of " +
                                 choices);
}

std::string_view UpstreamKindName(UpstreamKind kind) {
  for (const auto& [k, name] : kKindNames) {
    if (k == kind) return name;
  }
  return "unknown";
}

std::string_view KvActionName(KvAction action) {
  switch (action) {
    case KvAction::kKeep:
      return "keep";
    case KvAction::kDemote:
      return "demote";
    case KvAction::kDiscard:
      return "discard";
  }
  return "unknown";
}

std::string_view CallKindName(CallKind kind) {
  switch (kind) {
    case CallKind::kProbe:
      return "probe";
    case CallKind::kOpen:
      return "open";
    case CallKind::kClose:
      return "close";
    case CallKind::kSave:
      return "save";
    case CallKind::kRestore:
      return "restore";
    case CallKind::kErase:
      return "erase";
    case CallKind::kWarmup:
      return "warm-up";
  }
  return "unknown";
}

Capabilities ApplyDeclared(Capabilities probed, const Capabilities& declared) {
  Declare(&probed.prefix_caching, declared.prefix_caching);
  Declare(&probed.session_id, declared.session_id);
  Declare(&probed.priority, declared.priority);
  Declare(&probed.kv_transfer_params, declared.kv_transfer_params);
  Declare(&probed.open_session, declared.open_session);
  Declare(&probed.close_session, declared.close_session);
  Declare(&probed.slots, declared.slots);
  Declare(&probed.slot_files, declared.slot_files);
  Declare(&probed.token_ids, declared.token_ids);
  if (declared.total_slots > 0) probed.total_slots = declared.total_slots;
  if (!declared.priority.source.empty()) probed.priority_low_first = declared.priority_low_first;
  return probed;
}

Status DeclareCapability(std::string_view word, Capabilities* caps) {
  const bool off = word.substr(0, 3) == "no-";
  const std::string_view name = off ? word.substr(3) : word;
  const std::pair<std::string_view, Capability Capabilities::*> flags[] = {
      {"prefix_caching", &Capabilities::prefix_caching},
      {"session_id", &Capabilities::session_id},
      {"priority", &Capabilities::priority},
      {"kv_transfer_params", &Capabilities::kv_transfer_params},
      {"open_session", &Capabilities::open_session},
      {"close_session", &Capabilities::close_session},
      {"slots", &Capabilities::slots},
      {"slot_files", &Capabilities::slot_files},
      {"token_ids", &Capabilities::token_ids},
  };
  for (const auto& [flag, member] : flags) {
    if (name == flag) {
      caps->*member = Capability{!off, "configured"};
      return Status::OK();
    }
  }
  if (!off && name == "priority_low_first") {
    caps->priority_low_first = true;
    return Status::OK();
  }
  if (!off && name.substr(0, 6) == "slots=") {
    int n = 0;
    const std::string_view digits = name.substr(6);
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
    if (ec == std::errc() && end == digits.data() + digits.size() && n > 0 && n <= 4096) {
      caps->slots = Capability{true, "configured"};
      caps->total_slots = n;
      return Status::OK();
    }
    return Status::InvalidArgument("slots=N wants N in 1..4096, got '" + std::string(digits) + "'");
  }
  std::string names;
  for (const auto& [flag, member] : flags) names += std::string(flag) + ", ";
  return Status::InvalidArgument("capabilities are " + names +
                                 "each with no- to declare it off, slots=N, priority_low_first");
}

nlohmann::json CapabilitiesToJson(const Capabilities& caps) {
  return nlohmann::json{
      {"prefix_caching", ToJson(caps.prefix_caching)},
      {"session_id", ToJson(caps.session_id)},
      {"priority", ToJson(caps.priority)},
      {"kv_transfer_params", ToJson(caps.kv_transfer_params)},
      {"open_session", ToJson(caps.open_session)},
      {"close_session", ToJson(caps.close_session)},
      {"slots", ToJson(caps.slots)},
      {"slot_files", ToJson(caps.slot_files)},
      {"token_ids", ToJson(caps.token_ids)},
      {"total_slots", caps.total_slots},
      {"priority_low_first", caps.priority_low_first},
  };
}

AdapterRegistry& AdapterRegistry::Global() {
  static AdapterRegistry* registry = [] {
    auto* r = new AdapterRegistry();
    (void)r->Register(UpstreamKind::kGeneric, &internal::NewGenericAdapter);
    (void)r->Register(UpstreamKind::kVllm, &internal::NewVllmAdapter);
    (void)r->Register(UpstreamKind::kSglang, &internal::NewSglangAdapter);
    (void)r->Register(UpstreamKind::kLlamaCpp, &internal::NewLlamaCppAdapter);
    return r;
  }();
  return *registry;
}

Status AdapterRegistry::Register(UpstreamKind kind, AdapterFactory factory) {
  MutexLock lock(&mu_);
  if (!factories_.emplace(kind, std::move(factory)).second) {
    return Status::AlreadyExists("an upstream adapter for " + std::string(UpstreamKindName(kind)) +
                                 " is already registered");
  }
  return Status::OK();
}

Result<std::unique_ptr<UpstreamAdapter>> AdapterRegistry::Create(
    UpstreamKind kind, const AdapterOptions& options) const {
  AdapterFactory factory;
  {
    MutexLock lock(&mu_);
    auto it = factories_.find(kind);
    if (it == factories_.end()) {
      return Status::NotFound("no upstream adapter is registered for " +
                              std::string(UpstreamKindName(kind)));
    }
    factory = it->second;
  }
  return factory(options);
}

}  // namespace switchyard::upstream
