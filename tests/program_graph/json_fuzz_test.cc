// Bounded fuzzing of JSON -> graph inside ctest: 20,000 inputs built by mutating valid
// workflow documents (byte flips, insertions, truncation, splicing, deep nesting, extreme
// numbers). No input may crash, and every accepted graph must satisfy the invariants
// checked by FuzzWorkflowJson (json_fuzz.h).
#include <gtest/gtest.h>

#include <random>

#include "tests/program_graph/json_fuzz.h"
#include "tests/program_graph/test_util.h"

namespace switchyard::program_graph {
namespace {

constexpr int kInputs = 20000;

std::vector<std::string> SeedCorpus() {
  std::vector<std::string> corpus = {
      R"({"id":"w","tenant":"t","nodes":[]})",
      R"({"id":"w","tenant":"t","deadlineMs":"90000","nodes":[
        {"id":"plan","kind":"LLM","cacheRefs":[{"context":"main","mode":"CREATE"}],
         "hints":{"promptTokens":"2000","maxOutputTokens":"200"}},
        {"id":"search","kind":"TOOL","deps":["plan"],"sideEffect":true,
         "hints":{"expectedDurationMs":"1500"},"toolName":"web"},
        {"id":"code","kind":"TOOL","deps":["plan"],"idempotencyKey":"k"},
        {"id":"answer","kind":"LLM","deps":["search","code"],"deadlineMs":"80000",
         "cacheRefs":[{"context":"main","mode":"EXTEND"}],"retry":{"maxAttempts":2}}]})",
      R"({"id":"x","nodes":[{"id":"a","kind":"TOOL"},{"id":"b","kind":"LLM","deps":["a"]},
        {"id":"c","kind":"LLM","deps":["b","a"],"role":"r"}],"labels":{"k":"v"}})",
  };
  // Generated chains and fan-outs with contexts.
  std::mt19937_64 rng(7);
  for (int g = 0; g < 12; ++g) {
    v1::Workflow wf;
    wf.set_id("gen" + std::to_string(g));
    wf.set_tenant("t");
    int n = 2 + g * 3;
    for (int k = 0; k < n; ++k) {
      auto node =
          k % 2 ? testing::Tool("n" + std::to_string(k)) : testing::Llm("n" + std::to_string(k));
      if (k > 0) node.add_deps("n" + std::to_string(g % 2 ? 0 : k - 1));
      if (k == 0) node = testing::WithRef(node, "ctx", v1::CacheRef::CREATE);
      if (k > 0 && k % 2 == 0) node = testing::WithRef(node, "ctx", v1::CacheRef::READ);
      node.mutable_hints()->set_max_output_tokens(rng() % 100);
      *wf.add_nodes() = node;
    }
    auto json = proto::ToJson(wf);
    if (json.ok()) corpus.push_back(*json);
  }
  return corpus;
}

std::string Mutate(std::mt19937_64& rng, const std::vector<std::string>& corpus) {
  static const char* kTokens[] = {"{",
                                  "}",
                                  "[",
                                  "]",
                                  ",",
                                  ":",
                                  "\"",
                                  "-1",
                                  "1e308",
                                  "\"9223372036854775807\"",
                                  "null",
                                  "true",
                                  "\"deps\":[\"n0\"]",
                                  "\"kind\":\"TOOL\"",
                                  "\"id\":\"n1\"",
                                  "\\u0000",
                                  "\"CREATE\""};
  std::string s = corpus[rng() % corpus.size()];
  int edits = 1 + rng() % 4;
  for (int e = 0; e < edits && !s.empty(); ++e) {
    size_t at = rng() % s.size();
    switch (rng() % 6) {
      case 0:  // byte flip
        s[at] = static_cast<char>(s[at] ^ (1u << (rng() % 8)));
        break;
      case 1:  // token insertion
        s.insert(at, kTokens[rng() % (sizeof(kTokens) / sizeof(kTokens[0]))]);
        break;
      case 2:  // truncation
        s.resize(at);
        break;
      case 3: {  // splice with another document
        const std::string& o = corpus[rng() % corpus.size()];
        s = s.substr(0, at) + o.substr(rng() % o.size());
        break;
      }
      case 4: {  // deep nesting
        int depth = 1 + rng() % 200;
        std::string open(depth, '['), close(depth, ']');
        if (rng() % 2) {
          open.clear();
          close.clear();
          for (int d = 0; d < depth; ++d) {
            open += "{\"a\":";
            close += "}";
          }
        }
        s.insert(at, open + close);
        break;
      }
      default:  // delete a span
        s.erase(at, rng() % 16);
        break;
    }
  }
  return s;
}

TEST(JsonFuzzTest, SeedsAreAccepted) {
  for (const std::string& s : SeedCorpus()) {
    auto out = FuzzWorkflowJson(reinterpret_cast<const uint8_t*>(s.data()), s.size());
    EXPECT_TRUE(out.parsed) << s;
    EXPECT_TRUE(out.accepted) << s;
    EXPECT_EQ(out.violation, "") << s;
  }
}

TEST(JsonFuzzTest, MutatedInputsNeverBreakInvariants) {
  auto corpus = SeedCorpus();
  std::mt19937_64 rng(12345);
  int parsed = 0, accepted = 0;
  for (int i = 0; i < kInputs; ++i) {
    std::string s = Mutate(rng, corpus);
    auto out = FuzzWorkflowJson(reinterpret_cast<const uint8_t*>(s.data()), s.size());
    ASSERT_EQ(out.violation, "") << "input #" << i << ": " << s;
    parsed += out.parsed;
    accepted += out.accepted;
  }
  // The mutations must exercise both the rejecting and the accepting paths.
  EXPECT_GT(parsed, kInputs / 100);
  EXPECT_GT(accepted, kInputs / 200);
  EXPECT_LT(accepted, kInputs);
}

}  // namespace
}  // namespace switchyard::program_graph
