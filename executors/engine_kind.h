// EngineKind: the engines LLM nodes can run on, by the name that configs (`engine`), flags
// (`--engine`) and a joined worker's hello use — the one place where an engine is chosen
// by its name. Code asks a kind what it does (`computes`) instead of comparing names.
//
//   simulated  the simulated engine (executors/simulated_engine.h): continuous batching
//              timed by the roofline step cost of a model on a GPU spec; it computes no
//              model, and KV bytes are emulated at a scale
//   cpu        the reference CPU engine (cpu_engine/cpu_engine.h): a Llama-family
//              model computed on this machine's CPU, real tokens and real KV bytes
//
// The driver's EngineRegistry (driver/engine_registry.h) makes each kind's engines.
// Thread-safety: immutable data.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace switchyard::executors {

struct EngineKind {
  std::string_view name;
  // Computes the model on this machine: real tokens, real KV bytes in its pool (it needs a
  // model: a shape file or a checkpoint directory).
  bool computes = false;
  std::string_view description;
};

// Every kind, in the order messages list them.
const std::vector<EngineKind>& EngineKinds();
// The kind named `name`; InvalidArgument "<what> must be 'simulated' or 'cpu', got 'x'".
Result<const EngineKind*> FindEngineKind(std::string_view name, std::string_view what = "engine");
// The names joined, e.g. "'simulated' or 'cpu'" (quoted, " or ") or "simulated, cpu".
std::string EngineKindNames(bool quoted = true);
// Whether `name` is a kind that computes (false for an unknown name).
bool EngineComputes(std::string_view name);

}  // namespace switchyard::executors
