// Reading a streamed answer in the fronts' tests: the body of a chunked HTTP response, and
// the events of a server-sent-events body (as the Anthropic and Responses fronts write
// them: "event: <name>\ndata: <json>\n\n").
//
// Thread-safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <utility>
#include <vector>

namespace switchyard::testing {

// The body carried by a chunked transfer coding, up to its last (empty) chunk.
inline std::string Dechunk(const std::string& chunked) {
  std::string body;
  for (size_t i = 0; i < chunked.size();) {
    size_t eol = chunked.find("\r\n", i);
    if (eol == std::string::npos) break;
    size_t n = std::stoul(chunked.substr(i, eol - i), nullptr, 16);
    if (n == 0) break;
    body += chunked.substr(eol + 2, n);
    i = eol + 2 + n + 2;
  }
  return body;
}

// The (event, data) pairs of a chunked SSE body whose events are named; data that is not
// JSON parses as a discarded value.
inline std::vector<std::pair<std::string, nlohmann::json>> NamedEvents(const std::string& chunked) {
  const std::string body = Dechunk(chunked);
  std::vector<std::pair<std::string, nlohmann::json>> out;
  for (size_t i = 0; (i = body.find("event: ", i)) != std::string::npos;) {
    size_t eol = body.find('\n', i);
    size_t end = body.find("\n\n", eol);
    std::string data = body.substr(eol + 7, end - eol - 7);  // "\ndata: "
    out.emplace_back(body.substr(i + 7, eol - i - 7), nlohmann::json::parse(data, nullptr, false));
    i = end;
  }
  return out;
}

}  // namespace switchyard::testing
