// Generation: what a front door needs of the engines behind the scheduler, and nothing
// more — the served models and their tokenizers, an LLM node's input (its prompt's token
// ids and sampling), and the node's output as a token stream. The scheduler driver
// (driver/scheduler_driver.h) implements it; a front reaches it through
// service::Service::generation(), so that the fronts (frontends/) depend on the service
// and this interface, never on the driver.
//
// Thread-safety: every method may be called from any thread; watchers run on the
// scheduler's thread and must not block.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "base/status.h"
#include "executors/engine.h"
#include "scheduler/reported_load.h"

namespace switchyard::cpu_engine {
class Model;
class Tokenizer;
}  // namespace switchyard::cpu_engine

namespace switchyard::executors {

class Generation {
 public:
  virtual ~Generation() = default;

  // The engines' names in worker order, each once ("cpu", "simulated, cpu").
  virtual std::string model_executor_name() const = 0;
  // Whether the scheduler's own engines run LLM nodes (false with `--llm reported`, where
  // an engine outside reports them through the workflow API).
  virtual bool runs_llm_nodes() const = 0;
  // The default served model's id, and every served id (the default first).
  virtual std::string model_name() const = 0;
  virtual std::vector<std::string> model_ids() const = 0;
  // The served id of a requested model: empty (the default model) and aliases map to it;
  // any other name is InvalidArgument naming it and what is served.
  virtual Result<std::string> ResolveModel(const std::string& model_id) const = 0;
  // The CPU engine's model and tokenizer of a served model (null for other engines);
  // `model_id` a served id or alias, empty: the default model.
  virtual const cpu_engine::Model* cpu_model(const std::string& model_id = "") const = 0;
  virtual const cpu_engine::Tokenizer* tokenizer(const std::string& model_id = "") const = 0;

  // What an LLM node needs beyond the workflow API's token counts: its new tokens' ids
  // and sampling. Set it before the node is appended.
  struct NodeInput {
    std::vector<int32_t> prompt_token_ids;
    double temperature = 0.0, top_p = 1.0;
    uint64_t seed = 0;
    bool stop_at_eos = true;
    int token_mask = -1;  // engine "cpu", byte tokenizer: kTextMask (-1) or kJsonStringMask
    // Non-empty: the output is one JSON object of this schema's required keys
    // (SequenceSpec::json_schema); a forced tool call's arguments.
    std::string json_schema;
    std::vector<std::pair<int32_t, float>> logit_bias;  // SequenceSpec::logit_bias
    std::vector<std::string> choices;                   // SequenceSpec::choices
    int priority = 0;              // SequenceSpec::priority: lower is more important (vLLM's)
    KvTransferParams kv_transfer;  // SequenceSpec::kv_transfer: host offload controls
  };
  static constexpr int kTextMask = 0, kJsonStringMask = 1;
  virtual void SetNodeInput(const std::string& wf, const std::string& node, NodeInput input) = 0;

  // An LLM node's output as its engine emits it, on the scheduler's thread: each token
  // once (index: its place in the output; engines that compute no tokens send none), then
  // one event with `finished` — OK when the node succeeded (output_tokens: how many it
  // produced), an error when its workflow ended without it. Watch before the node runs.
  struct TokenEvent {
    int32_t token = -1;
    int64_t index = -1;
    bool finished = false;
    Status status;
    int64_t output_tokens = 0;
  };
  using TokenWatcher = std::function<void(const TokenEvent&)>;
  virtual void Watch(const std::string& wf, const std::string& node, TokenWatcher watcher) = 0;
  // Runs `fn` (on the scheduler's thread) when the core places the LLM node (a reported
  // engine then runs it: proxy mode forwards it at that moment), or with -1 when its
  // workflow ends first.
  virtual void WatchPlacement(const std::string& wf, const std::string& node,
                              std::function<void(int worker)> fn) = 0;
  // The workers LLM nodes are placed on (0 .. workers()-1), as built at start.
  virtual int workers() const = 0;

  // What the scheduler decided for a context's KV while its workflow waits (the core's
  // keep / demote / prefetch / discard commands). Proxy mode acts on it: the KV lives in an
  // upstream engine, which the front steers (upstream/steering.h).
  struct KvDecision {
    enum class Kind { kKeep, kDemote, kPrefetch, kDiscard } kind = Kind::kKeep;
    std::string workflow;
    std::string context;  // "<workflow>/<context>"
    int worker = -1;      // where the context was (keep, demote, discard) or goes (prefetch)
    // Demote: when the scheduler plans to bring it back (ms since its clock's epoch; 0: no
    // plan, it comes back on demand).
    int64_t planned_prefetch_ms = 0;
  };
  // Runs `fn` (on the scheduler's thread) for every such decision from now on; one watcher
  // (a later call replaces it; an empty `fn` stops the calls).
  virtual void WatchKv(std::function<void(const KvDecision&)> fn) = 0;

  // What worker `worker`'s engine says of its own load (proxy mode: its upstream's
  // Prometheus gauges, which count other clients' requests too): placement weighs it
  // (scheduler::CoreOptions::reported_load_ttl says how long it counts). Out of range:
  // ignored.
  virtual void ReportLoad(int worker, const scheduler::ReportedLoad& load) {}
  // Worker `worker`'s engine no longer holds context `context`'s KV ("<workflow>/<context>",
  // as KvDecision names it; proxy mode: its upstream's KV events say the blocks went):
  // where the scheduler still counts it resident and idle there, it is dropped (a
  // discard), so the next call is placed as one that recomputes it.
  virtual void ReportContextEvicted(const std::string& context, int worker) {}

  // The prompt tokens of an LLM node its engine did not compute — KV its context already
  // held plus KV its engine's prefix cache found (automatic prefix caching) — as the
  // attempt that produced its first token was admitted (SeqProgress::cached_tokens);
  // nullopt before that token or for an engine outside. What a front reports as
  // usage's cached tokens.
  virtual std::optional<int64_t> cached_tokens(const std::string& wf,
                                               const std::string& node) const {
    return std::nullopt;
  }
};

}  // namespace switchyard::executors
