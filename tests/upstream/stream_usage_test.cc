// Steering asks a streamed Chat Completions request for its usage and keeps the usage
// event from a client that did not ask for it (upstream/stream_usage.h).
#include "upstream/stream_usage.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>

namespace switchyard::upstream {
namespace {

using nlohmann::json;

http::HttpRequest UsagePost(const std::string& path, const json& body) {
  return {"POST", path, {}, body.dump()};
}

TEST(AskUsage, SetsIncludeUsageOnlyOnStreamsThatDidNotAsk) {
  http::HttpRequest r = UsagePost("/v1/chat/completions", {{"model", "m"}, {"stream", true}});
  EXPECT_TRUE(AskUsage(&r));
  EXPECT_EQ(json::parse(r.body)["stream_options"]["include_usage"], true);
  http::HttpRequest asked = UsagePost(
      "/v1/completions", {{"stream", true}, {"stream_options", {{"include_usage", true}}}});
  EXPECT_FALSE(AskUsage(&asked)) << "it asked: its usage event is its own";
  http::HttpRequest whole = UsagePost("/v1/chat/completions", {{"stream", false}});
  EXPECT_FALSE(AskUsage(&whole));
  EXPECT_EQ(whole.body, R"({"stream":false})") << "left as it came";
  http::HttpRequest messages = UsagePost("/v1/messages", {{"stream", true}});
  EXPECT_FALSE(AskUsage(&messages)) << "Messages streams always carry usage";
  http::HttpRequest odd =
      UsagePost("/v1/chat/completions", {{"stream", true}, {"stream_options", 3}});
  EXPECT_FALSE(AskUsage(&odd)) << "a malformed option goes to the upstream as it is";
}

const char kUsageChunk[] =
    "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}],"
    "\"usage\":null}\n\n";
const char kUsageEvent[] =
    "data: {\"id\":\"c\",\"choices\":[],\"usage\":{\"prompt_tokens\":9,"
    "\"completion_tokens\":1,\"prompt_tokens_details\":{\"cached_tokens\":8}}}\n\n";
const char kUsageDone[] = "data: [DONE]\n\n";

TEST(UsageEventFilter, DropsTheUsageEventWhereverThePiecesBreak) {
  const std::string stream = std::string(kUsageChunk) + kUsageChunk + kUsageEvent + kUsageDone;
  const std::string want = std::string(kUsageChunk) + kUsageChunk + kUsageDone;
  for (size_t piece : {size_t{1}, size_t{2}, size_t{3}, size_t{7}, size_t{64}, stream.size()}) {
    UsageEventFilter f;
    std::string got;
    for (size_t at = 0; at < stream.size(); at += piece) got += f.Filter(stream.substr(at, piece));
    EXPECT_EQ(got, want) << "pieces of " << piece;
  }
}

TEST(UsageEventFilter, KeepsEveryOtherEventAndCrlfStreams) {
  UsageEventFilter f;
  const std::string crlf =
      "data: {\"choices\":[{\"index\":0}]}\r\n\r\n"
      "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":1}}\r\n\r\n"
      ": a comment\r\n\r\n";
  EXPECT_EQ(f.Filter(crlf), "data: {\"choices\":[{\"index\":0}]}\r\n\r\n: a comment\r\n\r\n");
  UsageEventFilter g;
  // An error event and a chunk whose usage is null (not an object) pass.
  const std::string other =
      "data: {\"choices\":[],\"usage\":null}\n\ndata: {\"error\":{\"message\":\"x\"}}\n\n";
  EXPECT_EQ(g.Filter(other), other);
  UsageEventFilter h;
  EXPECT_EQ(h.Filter("data: {\"choices\":[{\"index\":0}]}"), "") << "held until it ends";
  EXPECT_EQ(h.Filter("\n\n"), "data: {\"choices\":[{\"index\":0}]}\n\n");
}

TEST(UsageEventFilter, AnOverlongEventPassesAsItComes) {
  UsageEventFilter f;
  const std::string big = "data: {\"x\":\"" + std::string(UsageEventFilter::kMaxEventBytes, 'a');
  EXPECT_EQ(f.Filter(big), big);
  EXPECT_EQ(f.Filter("\"}\n\n"), "\"}\n\n");
  EXPECT_EQ(f.Filter(kUsageEvent), "") << "the next event is examined again";
}

}  // namespace
}  // namespace switchyard::upstream
