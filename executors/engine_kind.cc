#include "executors/engine_kind.h"

namespace switchyard::executors {

const std::vector<EngineKind>& EngineKinds() {
  static const std::vector<EngineKind> kinds = {
      {"simulated", false, "the simulated engine: roofline step times, emulated KV bytes"},
      {"cpu", true, "the reference CPU engine: the model computed here, real KV bytes"},
  };
  return kinds;
}

std::string EngineKindNames(bool quoted) {
  std::string out;
  const auto& kinds = EngineKinds();
  for (size_t i = 0; i < kinds.size(); ++i) {
    if (i > 0) out += quoted ? (i + 1 == kinds.size() ? " or " : ", ") : ", ";
    out += quoted ? "'" + std::string(kinds[i].name) + "'" : std::string(kinds[i].name);
  }
  return out;
}

Result<const EngineKind*> FindEngineKind(std::string_view name, std::string_view what) {
  for (const EngineKind& k : EngineKinds())
    if (k.name == name) return &k;
  return Status::InvalidArgument(std::string(what) + " must be " + EngineKindNames() + ", got '" +
                                 std::string(name) + "'");
}

bool EngineComputes(std::string_view name) {
  for (const EngineKind& k : EngineKinds())
    if (k.name == name) return k.computes;
  return false;
}

}  // namespace switchyard::executors
