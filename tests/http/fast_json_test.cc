// TryParseJson agrees with protobuf's JSON parser whenever it accepts a document, and
// accepts the common request bodies (so the fast path is the one taken).
#include "http/fast_json.h"

#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <random>

#include "proto/json.h"
#include "proto/switchyard/v1/api.pb.h"

namespace switchyard::http {
namespace {

template <typename T>
void ExpectAgrees(const std::string& json, bool must_accept = false) {
  T fast, slow;
  bool ok = TryParseJson(json, &fast);
  Status st = proto::ParseJson(json, &slow);
  if (must_accept) {
    EXPECT_TRUE(ok) << json;
  }
  if (!ok) return;
  ASSERT_TRUE(st.ok()) << "fast path accepted what protobuf rejects: " << json << "\n" << st;
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(fast, slow))
      << json << "\nfast: " << fast.ShortDebugString() << "\nslow: " << slow.ShortDebugString();
}

const std::vector<std::string>& EventDocs() {
  static const std::vector<std::string> docs = {
      R"({"nodeId":"n3","type":"TOOL_STARTED"})",
      R"({"node_id":"n3","type":"TOOL_FINISHED","attempt":2})",
      R"( { "nodeId" : "plan" , "type" : "LLM_FINISHED" , "outputTokens" : 12 } )",
      R"({"nodeId":"x","type":"TOOL_FAILED","error":"exit 1","retryable":true,"timeMs":17})",
      R"({"nodeId":"x","type":"TOOL_FAILED","retryable":false,"timeMs":-5,"requestId":"r"})",
      R"({"workflowId":"wf","nodeId":"n","type":"LLM_STARTED","outputTokens":9007199254740993})",
      R"({})",
  };
  return docs;
}

const std::vector<std::string>& NodeDocs() {
  static const std::vector<std::string> docs = {
      R"({"nodes":[{"id":"n1","kind":"TOOL","toolName":"bench","deps":["n0"]}]})",
      R"({"nodes":[{"id":"a","kind":"LLM","cacheRefs":[{"context":"main","mode":"EXTEND"}],
          "hints":{"promptTokens":500,"maxOutputTokens":64}},{"id":"b","kind":"TOOL",
          "deps":["a"],"sideEffect":true}]})",
      R"({"nodes":[]})",
  };
  return docs;
}

TEST(FastJson, AcceptsTheCommonBodiesAndMatchesProtobuf) {
  for (const auto& d : EventDocs()) ExpectAgrees<v1::NodeEvent>(d, /*must_accept=*/true);
  for (const auto& d : NodeDocs()) ExpectAgrees<v1::AppendNodesRequest>(d, true);
  ExpectAgrees<v1::Workflow>(R"({"nodes":[{"id":"n0","kind":"TOOL","toolName":"bench"}]})", true);
}

TEST(FastJson, LeavesEverythingElseToProtobuf) {
  const char* docs[] = {
      R"({"nodeId":"n\u0033","type":"TOOL_STARTED"})",            // escape
      R"({"nodeId":"n3","type":"TOOL_STARTED","colour":"red"})",  // unknown field
      R"({"nodeId":"n3","nodeId":"n4"})",                         // duplicate
      R"({"nodeId":null})",
      R"({"type":3})",  // enum by number
      R"({"type":"NOPE"})",
      R"({"attempt":-1})",
      R"({"attempt":1.0})",
      R"({"attempt":"1"})",
      R"({"nodeId":"n3",})",
      R"({"nodeId":"é"})",
      R"({"nodeId":"n3"} x)",
      "",
  };
  for (const char* d : docs) {
    v1::NodeEvent e;
    EXPECT_FALSE(TryParseJson(d, &e)) << d;
    ExpectAgrees<v1::NodeEvent>(d);
  }
}

// Random edits of valid documents: whatever the fast path accepts, protobuf parses to the
// same message.
TEST(FastJson, MutatedDocumentsAgreeWithProtobuf) {
  std::mt19937 rng(7);
  const std::string alphabet = "{}[]:,\"0123456789-.eE truefalsnul\\abcdeTOOL_STARTEDnodeIdtype";
  auto mutate = [&](std::string s) {
    int edits = 1 + static_cast<int>(rng() % 3);
    for (int k = 0; k < edits && !s.empty(); ++k) {
      size_t at = rng() % s.size();
      switch (rng() % 3) {
        case 0:
          s.erase(at, 1);
          break;
        case 1:
          s.insert(at, 1, alphabet[rng() % alphabet.size()]);
          break;
        default:
          s[at] = alphabet[rng() % alphabet.size()];
      }
    }
    return s;
  };
  int accepted = 0;
  for (int i = 0; i < 4000; ++i) {
    std::string e = mutate(EventDocs()[rng() % EventDocs().size()]);
    ExpectAgrees<v1::NodeEvent>(e);
    std::string n = mutate(NodeDocs()[rng() % NodeDocs().size()]);
    ExpectAgrees<v1::AppendNodesRequest>(n);
    v1::NodeEvent probe;
    accepted += TryParseJson(e, &probe);
  }
  EXPECT_GT(accepted, 0);
}

}  // namespace
}  // namespace switchyard::http
