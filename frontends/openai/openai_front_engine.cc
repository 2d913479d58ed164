// OpenAiFront's answers from this server's engine (see openai_front.h, "Answers"): the
// node's input, its tokens as they come (a stream's deltas, held back where a stop
// sequence or a character may still be cut), and the answer — whole or the stream's last
// chunks — once the session's waits started.
#include <algorithm>
#include <random>
#include <string_view>

#include "base/mutex.h"
#include "executors/cpu/tokenizer.h"
#include "executors/generation.h"
#include "frontends/openai/openai_call.h"
#include "frontends/openai/openai_front.h"
#include "frontends/openai/openai_prompt.h"
#include "frontends/openai/openai_response.h"

namespace switchyard::frontends {

namespace oa = openai;

namespace {

// A sampling seed for a request that gave none: OpenAI samples afresh on every request.
uint64_t FreshSeed() {
  static Mutex mu;
  static std::mt19937_64 gen{std::random_device{}()};
  MutexLock lock(&mu);
  return gen();
}

// `text` cut before the first of `stops` it holds; whether it was.
bool CutAtStop(const std::vector<std::string>& stops, std::string* text) {
  bool stopped = false;
  for (const std::string& stop : stops)
    if (size_t at = text->find(stop); at != std::string::npos) text->resize(at), stopped = true;
  return stopped;
}

}  // namespace

void OpenAiFront::Generate(const CallPtr& c) {
  executors::Generation* d = service_->generation();
  const oa::Request& r = c->req;
  executors::Generation::NodeInput in;
  in.prompt_token_ids.assign(c->prompt.begin() + c->turn.cached, c->prompt.end());
  in.temperature = r.temperature;
  in.top_p = r.top_p;
  in.seed = r.seed ? *r.seed : FreshSeed();
  in.stop_at_eos = !c->tool;
  in.token_mask =
      c->tool ? executors::Generation::kJsonStringMask : executors::Generation::kTextMask;
  d->SetNodeInput(c->turn.workflow, c->turn.node, std::move(in));
  d->Watch(c->turn.workflow, c->turn.node,
           life_.Guard([this, c](const executors::Generation::TokenEvent& t) {
             if (t.finished)
               Finish(c, t.status, t.output_tokens);
             else
               OnToken(c, t.token);
           }));
}

void OpenAiFront::OnToken(const CallPtr& c, int32_t token) {
  executors::Generation* d = service_->generation();
  const executors::cpu::Tokenizer* tok = d->tokenizer(c->model);
  MutexLock lock(&c->mu);
  if (c->stopped) return;
  if (tok && token == tok->eos_id() && !c->tool) {
    c->eos = true;
    return;
  }
  c->output.push_back(token);
  if (!c->stream || c->tool || !tok) return;
  std::string text = tok->Decode(c->output);
  if (CutAtStop(c->req.stop, &text)) c->stopped = true;
  size_t safe = text.size();
  if (!c->stopped) {
    safe -= oa::UnsettledTail(text, c->req.stop);
    safe = oa::Utf8SafePrefix(std::string_view(text).substr(0, safe));
  }
  if (safe > c->sent.size() && text.compare(0, c->sent.size(), c->sent) == 0) {
    c->stream->Write(
        oa::ChunkEvent(c->head, text.substr(c->sent.size(), safe - c->sent.size()), false, ""));
    c->sent = text.substr(0, safe);
  }
}

void OpenAiFront::Finish(const CallPtr& c, const Status& st, int64_t output_tokens) {
  Post([this, c, st, output_tokens]() {
    if (!st.ok()) return Fail(c, st);
    if (!service_->generation()->tokenizer(c->model)) {  // simulated engine: a placeholder
      MutexLock lock(&c->mu);
      c->output.assign(static_cast<size_t>(std::max<int64_t>(0, output_tokens)), 0);
    }
    Answer(c);
  });
}

void OpenAiFront::OpenStream(const CallPtr& c) {
  if (!c->req.stream || upstream_) return;
  MutexLock lock(&c->mu);
  if (c->stream || c->answered) return;
  c->stream = std::make_shared<http::ResponseStream>();
  http::HttpResponse h{200, "text/event-stream", {}, ""};
  h.headers["x-switchyard-workflow-id"] = c->turn.workflow;
  h.headers["x-switchyard-node-id"] = c->turn.node;
  h.stream = c->stream;
  c->stream->Write(oa::ChunkEvent(c->head, "", /*first=*/true, ""));
  // A client that goes away before the answer ends: its generation stops (the workflow is
  // cancelled) and its session starts afresh with its next request.
  // (The call is held weakly: the stream keeps its hook after it ends, and the call holds
  // the stream.)
  std::weak_ptr<Call> weak = c;
  c->stream->SetOnCancel(life_.Guard([this, weak]() {
    if (CallPtr call = weak.lock()) Post([this, call]() { Abandon(call); });
  }));
  c->respond(std::move(h));
}

void OpenAiFront::Answer(const CallPtr& c) {
  OpenStream(c);  // the node ran, so it was admitted
  const executors::cpu::Tokenizer* tok = service_->generation()->tokenizer(c->model);
  std::vector<int32_t> output;
  oa::Response resp = Compose(c, &output);
  // The session goes on: its context is the prompt and what the engine produced, and a
  // wait node per tool call (or one `client`) runs until its next request.
  std::vector<int32_t> context = c->prompt;
  context.insert(context.end(), output.begin(), output.end());
  if (c->eos && tok) context.push_back(tok->eos_id());  // the context holds it too
  std::vector<std::string> names;
  for (const oa::ToolCall& call : resp.choice.tool_calls) names.push_back(call.name);
  sessions_.EndTurn(c->turn, std::move(context), std::move(names),
                    [this, c, resp](const Status& st) {
                      if (!st.ok()) return Fail(c, st);
                      Reply(c, resp);
                    });
}

oa::Response OpenAiFront::Compose(const CallPtr& c, std::vector<int32_t>* output) {
  const executors::cpu::Tokenizer* tok = service_->generation()->tokenizer(c->model);
  oa::Response resp = c->head;
  {
    MutexLock lock(&c->mu);
    *output = c->output;
    std::string text;
    if (tok) {
      text = tok->Decode(*output);
    } else {
      for (size_t i = 0; i < output->size(); ++i) text += i ? " simulated" : "simulated";
    }
    bool stopped = CutAtStop(c->req.stop, &text);
    resp.choice.finish_reason = c->eos || stopped ? "stop" : "length";
    if (c->tool) {
      resp.choice.tool_calls.push_back(
          oa::ToolCall{c->call_id, c->tool->name, oa::ForcedCallArguments(c->arg_name, text)});
      resp.choice.finish_reason = "tool_calls";
    } else {
      resp.choice.text = text;
    }
    if (c->stream && !c->tool && text.size() > c->sent.size() &&
        text.compare(0, c->sent.size(), c->sent) == 0)
      c->stream->Write(oa::ChunkEvent(c->head, text.substr(c->sent.size()), false, ""));
  }
  resp.usage.prompt_tokens = static_cast<int64_t>(c->prompt.size());
  resp.usage.completion_tokens = static_cast<int64_t>(output->size()) + (c->eos ? 1 : 0);
  resp.usage.cached_tokens = c->turn.cached;
  return resp;
}

void OpenAiFront::Reply(const CallPtr& c, const oa::Response& resp) {
  if (c->answered.exchange(true)) return;  // failed or abandoned: the session was reset
  sessions_.Release(c->turn);
  if (!c->req.stream) {
    http::HttpResponse h{200, "application/json", {}, oa::ResponseJson(resp)};
    h.headers["x-switchyard-workflow-id"] = c->turn.workflow;
    h.headers["x-switchyard-node-id"] = c->turn.node;
    return c->respond(std::move(h));
  }
  if (c->tool) c->stream->Write(oa::ChunkEvent(c->head, "", false, "", &resp.choice.tool_calls));
  c->stream->Write(oa::ChunkEvent(c->head, "", false, resp.choice.finish_reason));
  if (c->req.include_usage) c->stream->Write(oa::UsageEvent(resp));
  c->stream->Write(oa::kDoneEvent);
  c->stream->Close();
}

}  // namespace switchyard::frontends
