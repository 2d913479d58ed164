// The conversation of a Responses request, alone or after a previous_response_id chain (see
// responses_request.h).
#include "frontends/responses/responses_object.h"
#include "frontends/responses/responses_request.h"

namespace switchyard::frontends::responses {

Conversation ChainConversation(const std::vector<StoredResponse>& previous,
                               const CreateRequest& request) {
  std::vector<Item> items;
  for (const StoredResponse& r : previous) {
    items.insert(items.end(), r.input.begin(), r.input.end());
    items.insert(items.end(), r.output.begin(), r.output.end());
  }
  items.insert(items.end(), request.input.begin(), request.input.end());

  Conversation c;
  c.model = request.model;
  if (!request.instructions.empty()) {
    c.messages.push_back(Message{.role = "system", .content = request.instructions});
  }
  std::vector<Message> turns = ItemsToMessages(items, request.routes);
  c.messages.insert(c.messages.end(), std::make_move_iterator(turns.begin()),
                    std::make_move_iterator(turns.end()));
  c.tools = request.tools;
  c.tool_choice = request.tool_choice;
  c.parallel_tool_calls = request.parallel_tool_calls;
  c.sampling.max_tokens = request.max_output_tokens;
  c.sampling.temperature = request.temperature;
  c.sampling.top_p = request.top_p;
  return c;
}

Conversation ToConversation(const CreateRequest& request) { return ChainConversation({}, request); }

}  // namespace switchyard::frontends::responses
