// responses: the protocol layer of the OpenAI Responses API front door (POST /v1/responses,
// GET and DELETE /v1/responses/{id}, GET /v1/responses/{id}/input_items), as Codex and the
// OpenAI SDKs speak it.
//
// Pure functions and values between the wire and the service, one header per part:
//   responses_request.h  parse a create request (ParseCreate) into a CreateRequest; the
//                        Conversation it continues (ChainConversation, ToConversation);
//   responses_items.h    the normalized input and output items, flattened tool names;
//   responses_headers.h  the session, thread and client ids, originator, bearer token;
//   responses_object.h   StoredResponse (built from a request and an Answer, stored and read
//                        back), the response object, input_items lists, deletions, errors;
//   responses_stream.h   the SSE events of a streamed answer.
// Nothing here calls the service or stores anything; the caller allocates response ids.
//
// Request fields, decided one by one (others unknown are accepted and listed in `ignored`):
//   honoured  model, input (message, function_call, function_call_output items; a string is
//             one user message), instructions, tools (function; namespace, flattened),
//             tool_choice (auto, none, required, {type: function, name}),
//             parallel_tool_calls, max_output_tokens, temperature, top_p, stream, store,
//             previous_response_id (the caller loads the chain), prompt_cache_key (a
//             session id fallback), prompt_cache_retention ("24h": the session's context
//             is retained a day; "in-memory"), metadata, user, text.format {type: text}
//   listed    reasoning, include, client_metadata, service_tier,
//             truncation, safety_identifier, stream_options, top_logprobs, max_tool_calls,
//             text.verbosity; hosted tools (web_search*, file_search, code_interpreter,
//             computer_use*, image_generation, local_shell, mcp, custom, tool_search, shell,
//             apply_patch) and a namespace's custom tools; input items: reasoning (kept for
//             listings), the hosted tools' call items (left out)
//   refused   background: true; conversation; prompt; text.format json_schema / json_object
//             (not enforced); input_image / input_file / input_audio parts (text only);
//             item_reference items; allowed_tools and hosted tool_choice; unknown item,
//             part and tool types
//
// JSON goes through nlohmann::json (responses_json.h, internal, over the OpenAI front's
// helpers); no exception leaves this layer.
//
// Thread-safety: every function is pure; a ResponsesStream is used by one thread at a time.
#pragma once

#include "frontends/responses/responses_headers.h"
#include "frontends/responses/responses_items.h"
#include "frontends/responses/responses_object.h"
#include "frontends/responses/responses_request.h"
#include "frontends/responses/responses_stream.h"
