// A toy "serving stack" embedding Switchyard through its C++ API (api/embedded.h).
//
// The agent side submits a small workflow (plan -> grep tool -> answer, all on one KV
// context); the engine side takes the scheduler's commands from the queue, "runs" every
// LLM node it is told to place (here: reports it finished at once) and prints every
// command it receives. Exits 0 when the workflow completed, 1 otherwise.
#include <cstdio>
#include <filesystem>
#include <string>

#include "api/embedded.h"

using namespace switchyard;  // NOLINT

namespace {

v1::ProgramNode Llm(const std::string& id, const std::string& dep, v1::CacheRef::Mode mode,
                    int prompt, int extend) {
  v1::ProgramNode n;
  n.set_id(id);
  n.set_kind(v1::LLM);
  n.set_model_id("Llama-3.1-8B");
  if (!dep.empty()) n.add_deps(dep);
  auto* r = n.add_cache_refs();
  r->set_context("main");
  r->set_mode(mode);
  n.mutable_hints()->set_prompt_tokens(prompt);
  n.mutable_hints()->set_extend_tokens(extend);
  n.mutable_hints()->set_max_output_tokens(64);
  return n;
}

int Fail(const Status& s) {
  std::fprintf(stderr, "embed_example: %s\n", s.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir =
      argc > 1 ? argv[1] : (std::filesystem::temp_directory_path() / "sy_embed").string();
  std::filesystem::remove_all(dir);
  api::EmbeddedOptions options;
  options.data_dir = dir;
  options.tenant = "engine-demo";
  auto sy = api::Embedded::Open(options);
  if (!sy.ok()) return Fail(sy.status());
  api::Embedded& e = **sy;

  v1::Workflow w;
  w.set_id("demo");
  *w.add_nodes() = Llm("plan", "", v1::CacheRef::CREATE, 4000, 4000);
  v1::ProgramNode grep;
  grep.set_id("grep");
  grep.set_kind(v1::TOOL);
  grep.set_tool_name("Grep");
  grep.add_deps("plan");
  grep.mutable_hints()->set_expected_duration_ms(40);
  *w.add_nodes() = grep;
  *w.add_nodes() = Llm("answer", "grep", v1::CacheRef::EXTEND, 4400, 400);
  auto id = e.Submit(w);
  if (!id.ok()) return Fail(id.status());
  if (Status s = e.Close(*id); !s.ok()) return Fail(s);
  std::printf("submitted workflow %s (plan -> grep -> answer)\n", id->c_str());

  bool completed = false;
  for (int idle = 0; idle < 100 && !completed;) {  // up to ~10 s without a command
    auto c = e.NextCommand(Millis(100));
    if (!c) {
      ++idle;
      continue;
    }
    idle = 0;
    std::printf("command: %s\n", c->decision.line().c_str());
    const std::string& kind = c->decision.kind();
    const std::string& node = c->decision.node_id();
    Status s;
    if (kind == "place") {  // the engine runs the LLM call on the given worker
      s = e.LlmStarted(c->workflow_id, node);
      if (s.ok()) s = e.LlmFinished(c->workflow_id, node, 64);
    } else if (kind == "admit") {  // the agent runs the tool and reports it
      v1::NodeEvent ev;
      ev.set_node_id(node);
      ev.set_type(v1::TOOL_STARTED);
      s = e.Report(c->workflow_id, ev);
      ev.set_type(v1::TOOL_FINISHED);
      if (s.ok()) s = e.Report(c->workflow_id, ev);
    } else if (kind == "complete" || kind == "fail") {
      completed = kind == "complete";
      break;
    }
    if (!s.ok()) return Fail(s);
  }
  auto st = e.Get(*id);
  if (!st.ok()) return Fail(st.status());
  std::printf("workflow %s: %s, %d decisions\n", id->c_str(),
              v1::WorkflowState_Name(st->state()).c_str(), st->decisions_size());
  for (const auto& kv : st->kv())
    std::printf("context %s: %s@%d, %llu bytes\n", kv.context().c_str(), kv.tier().c_str(),
                kv.worker(), static_cast<unsigned long long>(kv.bytes()));
  std::filesystem::remove_all(dir);
  return completed && st->state() == v1::WORKFLOW_COMPLETED ? 0 : 1;
}
