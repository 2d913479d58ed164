// FrontCore's answers from this server's engine (see front_core.h): the node's input, its
// tokens as they come (a stream's text, held back where a stop sequence or a character may
// still be cut), and the answer — whole or the stream's end — once the session's waits
// started.
#include <algorithm>
#include <optional>
#include <random>
#include <string_view>

#include "base/mutex.h"
#include "cpu_engine/tokenizer.h"
#include "executors/generation.h"
#include "frontends/front_call.h"
#include "frontends/front_core.h"
#include "frontends/prompt.h"
#include "frontends/stream_text.h"

namespace switchyard::frontends {

namespace {

// A sampling seed for a call that gave none: the hosted APIs sample afresh every time.
uint64_t FreshSeed() {
  static Mutex mu;
  static std::mt19937_64 gen{std::random_device{}()};
  MutexLock lock(&mu);
  return gen();
}

// `text` cut before the first of `stops` it holds; which one (empty if none).
std::string CutAtStop(const std::vector<std::string>& stops, std::string* text) {
  std::string which;
  for (const std::string& stop : stops)
    if (size_t at = text->find(stop); at != std::string::npos) text->resize(at), which = stop;
  return which;
}

}  // namespace

void FrontCore::Generate(const CallPtr& c) {
  executors::Generation* d = service_->generation();
  const Sampling& s = c->req.conv.sampling;
  executors::Generation::NodeInput in;
  in.prompt_token_ids.assign(c->prompt.begin() + c->turn.cached, c->prompt.end());
  in.temperature = s.temperature;
  in.top_p = s.top_p;
  in.seed = s.seed ? *s.seed : FreshSeed();
  in.stop_at_eos = true;
  in.token_mask = executors::Generation::kTextMask;
  if (c->tool) in.json_schema = c->schema;  // the engine ends it when the object closes
  in.logit_bias = s.logit_bias;
  in.choices = s.choices;
  in.priority = static_cast<int>(s.engine_priority);
  in.kv_transfer = {s.kv_transfer.max_load_tokens, s.kv_transfer.load_from_host,
                    s.kv_transfer.max_offload_tokens};
  d->SetNodeInput(c->turn.workflow, c->turn.node, std::move(in));
  d->Watch(c->turn.workflow, c->turn.node,
           life_.Guard([this, c](const executors::Generation::TokenEvent& t) {
             if (t.finished)
               Finish(c, t.status, t.output_tokens);
             else
               OnToken(c, t.token);
           }));
}

void FrontCore::OnToken(const CallPtr& c, int32_t token) {
  executors::Generation* d = service_->generation();
  const cpu_engine::Tokenizer* tok = d->tokenizer(c->model);
  MutexLock lock(&c->mu);
  if (c->stopped) return;
  if (tok && tok->IsEos(token)) {
    c->eos = true;
    c->eos_token = token;
    return;
  }
  c->output.push_back(token);
  if (!c->stream || c->tool || !tok) return;
  const std::vector<std::string>& stops = c->req.conv.sampling.stop;
  std::string text = tok->Decode(c->output);
  if (!CutAtStop(stops, &text).empty()) c->stopped = true;
  size_t safe = text.size();
  if (!c->stopped) {
    safe -= UnsettledTail(text, stops);
    safe = Utf8SafePrefix(std::string_view(text).substr(0, safe));
  }
  if (safe > c->sent.size() && text.compare(0, c->sent.size(), c->sent) == 0) {
    StreamContent(c.get(), std::string_view(text).substr(c->sent.size(), safe - c->sent.size()),
                  /*last=*/false);
    c->sent = text.substr(0, safe);
  }
}

void FrontCore::StreamContent(Call* c, std::string_view delta, bool last) {
  c->mu.AssertHeld();
  std::string content(delta);
  if (c->parse_calls) {  // what may be a call in the model's syntax is held back
    if (!c->calls) c->calls = c->format->parser()->NewStream();
    content = c->calls->Feed(delta).content;
    if (last) content += c->calls->Finish().content;
  }
  if (!content.empty()) c->stream->Write(c->reply->StreamText(content));
}

void FrontCore::Finish(const CallPtr& c, const Status& st, int64_t output_tokens) {
  Post([this, c, st, output_tokens]() {
    if (!st.ok()) return Fail(c, st);
    if (!service_->generation()->tokenizer(c->model)) {  // simulated engine: a placeholder
      MutexLock lock(&c->mu);
      c->output.assign(static_cast<size_t>(std::max<int64_t>(0, output_tokens)), 0);
      c->eos = output_tokens < c->max_tokens;  // the placeholder ended before the cap
    }
    Answer(c);
  });
}

void FrontCore::OpenStream(const CallPtr& c) {
  if (!c->req.stream || upstream_) return;
  MutexLock lock(&c->mu);
  if (c->stream || c->answered) return;
  c->stream = std::make_shared<http::ResponseStream>();
  http::HttpResponse h{200, "text/event-stream", {}, ""};
  h.headers["x-switchyard-workflow-id"] = c->turn.workflow;
  h.headers["x-switchyard-node-id"] = c->turn.node;
  h.stream = c->stream;
  c->reply->SetHead(c->head);
  c->stream->Write(c->reply->StreamStart());
  // A client that goes away before the answer ends: its generation stops (the workflow is
  // cancelled) and its session starts afresh with its next call.
  // (The call is held weakly: the stream keeps its hook after it ends, and the call holds
  // the stream.)
  std::weak_ptr<Call> weak = c;
  c->stream->SetOnCancel(life_.Guard([this, weak]() {
    if (CallPtr call = weak.lock()) Post([this, call]() { Abandon(call); });
  }));
  c->respond(std::move(h));
}

void FrontCore::Answer(const CallPtr& c) {
  OpenStream(c);  // the node ran, so it was admitted
  std::vector<int32_t> output;
  frontends::Answer answer = Compose(c, &output);
  // The session goes on: its context is the prompt and what the engine produced, and a
  // wait node per tool call (or one `client`) runs until its next call.
  std::vector<int32_t> context = c->prompt;
  context.insert(context.end(), output.begin(), output.end());
  bool eos;
  int32_t eos_token;
  {
    MutexLock lock(&c->mu);
    eos = c->eos;
    eos_token = c->eos_token;
  }
  if (eos && eos_token >= 0) context.push_back(eos_token);  // the context holds it too
  std::vector<std::string> names;
  for (const ToolCall& call : answer.tool_calls) names.push_back(call.name);
  sessions_.EndTurn(c->turn, std::move(context), std::move(names),
                    [this, c, answer](const Status& st) {
                      if (!st.ok()) return Fail(c, st);
                      c->reply->Commit(answer, life_.Guard([this, c, answer](const Status& st) {
                        Post([this, c, answer, st]() {
                          if (!st.ok()) return Fail(c, st);
                          Send(c, answer);
                        });
                      }));
                    });
}

frontends::Answer FrontCore::Compose(const CallPtr& c, std::vector<int32_t>* output) {
  const cpu_engine::Tokenizer* tok = service_->generation()->tokenizer(c->model);
  frontends::Answer a;
  MutexLock lock(&c->mu);
  *output = c->output;
  std::string text;
  if (tok) {
    text = tok->Decode(*output);
  } else {
    for (size_t i = 0; i < output->size(); ++i) text += i ? " simulated" : "simulated";
  }
  a.stop_sequence = CutAtStop(c->req.conv.sampling.stop, &text);
  a.end = !a.stop_sequence.empty() ? Answer::End::kStopSequence
          : c->eos                 ? Answer::End::kStop
                                   : Answer::End::kLength;
  if (c->tool) {
    a.tool_calls.push_back(
        ToolCall{c->call_id, c->tool->name, ForcedCallArguments(c->schema, text)});
    a.end = Answer::End::kToolCalls;
  } else if (c->parse_calls) {
    ReadCalls(*c, text, &a);
  } else {
    a.text = text;
  }
  a.prompt_tokens = static_cast<int64_t>(c->prompt.size());
  a.completion_tokens = static_cast<int64_t>(output->size()) + (c->eos && tok ? 1 : 0);
  a.cached_tokens = std::min(a.prompt_tokens, service_->generation()
                                                  ->cached_tokens(c->turn.workflow, c->turn.node)
                                                  .value_or(c->turn.cached));
  if (c->stream && !c->tool && text.size() >= c->sent.size() &&
      text.compare(0, c->sent.size(), c->sent) == 0)
    StreamContent(c.get(), std::string_view(text).substr(c->sent.size()), /*last=*/true);
  return a;
}

void FrontCore::ReadCalls(const Call& c, const std::string& text, frontends::Answer* a) const {
  chat_template::ParsedOutput parsed = c.format->parser()->Parse(text);
  a->text = std::move(parsed.content);
  for (chat_template::ToolCall& call : parsed.tool_calls) {
    const int index = static_cast<int>(a->tool_calls.size());
    a->tool_calls.push_back(
        ToolCall{c.reply->ToolCallId(index), std::move(call.name), std::move(call.arguments_json)});
    if (!c.req.conv.parallel_tool_calls) break;  // one call only
  }
  if (!a->tool_calls.empty()) a->end = Answer::End::kToolCalls;
}

void FrontCore::Send(const CallPtr& c, const frontends::Answer& answer) {
  if (c->answered.exchange(true)) return;  // failed or abandoned: the session was reset
  sessions_.Release(c->turn);
  std::optional<http::HttpResponse> whole;
  {
    MutexLock lock(&c->mu);
    if (!c->stream) {
      c->reply->SetHead(c->head);
      whole = c->reply->Whole(answer);
    } else {
      c->stream->Write(c->reply->StreamEnd(answer));
      c->stream->Close();
    }
  }
  if (!whole) return;
  whole->headers["x-switchyard-workflow-id"] = c->turn.workflow;
  whole->headers["x-switchyard-node-id"] = c->turn.node;
  c->respond(std::move(*whole));
}

}  // namespace switchyard::frontends
