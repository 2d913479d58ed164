// openai: the protocol layer of the OpenAI-compatible front door.
//
// Pure functions between the wire and the service, one header per part:
//   openai_request.h   parse the bodies of POST /v1/chat/completions and POST
//                      /v1/completions into a Request (validating every field the service
//                      acts on and refusing, with a 400 naming the field, what it cannot
//                      honour);
//   openai_headers.h   read the Switchyard headers (session id, deadline, priority);
//   openai_prompt.h    render a conversation into a prompt for tokenizers without a chat
//                      template, with its tool-call syntax;
//   openai_response.h  format responses, SSE chunks, model lists and errors as OpenAI
//                      clients expect them.
// Nothing here calls the service or allocates ids. This header includes them all.
//
// JSON goes through nlohmann::json (openai_json.h, internal); no exception leaves this
// layer: a malformed body is an InvalidArgument, and text that is not valid UTF-8 (a
// byte-level tokenizer's output) is written with U+FFFD in place of the bad bytes.
//
// Thread-safety: every function is pure (no shared state); call from any thread.
#pragma once

#include "frontends/openai/openai_headers.h"
#include "frontends/openai/openai_prompt.h"
#include "frontends/openai/openai_request.h"
#include "frontends/openai/openai_response.h"
