// Fuzzing: mutated templates (the test templates and real ones, cut, spliced, with tag
// and operator fragments and stray bytes inserted) and token soups, rendered with random
// contexts. Every case must end in a rendered text or an InvalidArgument error: no crash,
// no hang, no other status. Deterministic (fixed seeds); SY_FUZZ_ITERATIONS scales it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "chat_template/template.h"

namespace switchyard::chat_template {
namespace {

const char* kFragments[] = {"{%",
                            "%}",
                            "{{",
                            "}}",
                            "{#",
                            "#}",
                            "{%-",
                            "-%}",
                            "{{-",
                            "-}}",
                            "(",
                            ")",
                            "[",
                            "]",
                            "{",
                            "}",
                            "'",
                            "\"",
                            "\\",
                            "\\u12",
                            "if ",
                            "elif ",
                            "else",
                            "endif",
                            "for ",
                            " in ",
                            "endfor",
                            "set ",
                            "endset",
                            "macro ",
                            "endmacro",
                            "call ",
                            "endcall",
                            "filter ",
                            "endfilter",
                            "break",
                            "continue",
                            "|",
                            ".",
                            ":",
                            "::-1",
                            "**",
                            "*",
                            "//",
                            "%",
                            "~",
                            "not ",
                            " and ",
                            " or ",
                            " is ",
                            "defined",
                            "none",
                            "loop",
                            "loop.index",
                            "caller()",
                            "namespace(",
                            "range(",
                            "raise_exception(",
                            "tojson",
                            "items()",
                            "messages",
                            "message",
                            "tools",
                            "ns.x = ",
                            "=",
                            "==",
                            ",",
                            "-1",
                            "1.5",
                            "9999999",
                            "x",
                            "\n",
                            "  ",
                            "\t",
                            "\xC3\xA9",
                            "\xF0\x9F\x98\x80",
                            "\xFF",
                            "",  // stands for a NUL byte (see Fragment)
                            "|join(",
                            "|map(attribute=",
                            "|selectattr(",
                            "|sort",
                            "|indent(",
                            "strftime_now('%d')",
                            "{% generation %}",
                            "{% endgeneration %}",
                            "*args",
                            "**kw",
                            "varargs",
                            "kwargs"};

class Fuzzer {
 public:
  explicit Fuzzer(uint64_t seed) : rng_(seed) {}

  size_t Below(size_t n) {
    return n == 0 ? 0 : std::uniform_int_distribution<size_t>(0, n - 1)(rng_);
  }
  std::string Fragment() {
    std::string f = kFragments[Below(std::size(kFragments))];
    return f.empty() ? std::string(1, '\0') : f;
  }

  std::string Mutate(std::string t) {
    const size_t edits = 1 + Below(6);
    for (size_t e = 0; e < edits; ++e) {
      const size_t at = Below(t.size() + 1);
      switch (Below(5)) {
        case 0:
          t.erase(at, Below(20));
          break;
        case 1:
          t.insert(at, Fragment());
          break;
        case 2:
          t.insert(at, 1, static_cast<char>(Below(256)));
          break;
        case 3: {  // duplicate a slice somewhere else
          const std::string slice = t.substr(Below(t.size() + 1), Below(60));
          t.insert(Below(t.size() + 1), slice);
          break;
        }
        default:
          t.erase(at, Below(3)), t.insert(std::min(at, t.size()), Fragment());
      }
    }
    return t;
  }

  std::string Soup() {
    std::string t;
    const size_t n = 1 + Below(40);
    for (size_t i = 0; i < n; ++i) t += Fragment() + (Below(3) == 0 ? " " : "");
    return t;
  }

  Json Random(int depth) {
    switch (Below(depth > 3 ? 6 : 9)) {
      case 0:
        return nullptr;
      case 1:
        return Below(2) == 1;
      case 2:
        return static_cast<int64_t>(Below(2000)) - 1000;
      case 3:
        return static_cast<double>(Below(100000)) / 7.0;
      case 4:
        return std::string(Below(8), 'a' + static_cast<char>(Below(26))) +
               (Below(4) ? "" : "\xC3\xA9\n");
      case 5:
        return Json::array();
      case 6:
      case 7: {
        Json o = Json::object();
        const char* keys[] = {"role",       "content",  "name", "arguments",
                              "tool_calls", "function", "x",    "0"};
        for (size_t i = 0, n = Below(5); i < n; ++i)
          o[keys[Below(std::size(keys))]] = Random(depth + 1);
        return o;
      }
      default: {
        Json a = Json::array();
        for (size_t i = 0, n = Below(5); i < n; ++i) a.push_back(Random(depth + 1));
        return a;
      }
    }
  }

  Json Context() {
    Json messages = Json::array();
    const char* roles[] = {"system", "user", "assistant", "tool"};
    for (size_t i = 0, n = Below(5); i < n; ++i) {
      Json m = {{"role", roles[Below(4)]},
                {"content", Below(4) ? Json("hi <think>x</think> there") : Random(2)}};
      if (Below(4) == 0)
        m["tool_calls"] = Json::array({{{"function", {{"name", "f"}, {"arguments", Random(2)}}}}});
      messages.push_back(m);
    }
    Json c = {
        {"messages", messages}, {"add_generation_prompt", Below(2) == 1}, {"bos_token", "<s>"}};
    if (Below(2)) c["tools"] = Random(1);
    if (Below(2)) c["x"] = Random(0);
    return c;
  }

 private:
  std::mt19937_64 rng_;
};

std::vector<std::string> Corpus() {
  std::vector<std::string> corpus = {
      "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}",
      "{% set ns = namespace(a=0) %}{% for i in range(3) %}{% set ns.a = ns.a + i %}{% endfor %}{{ "
      "ns.a }}",
      "{% macro m(a, b=2) %}{{ a ~ b }}{{ caller() if caller is defined }}{% endmacro %}{% call "
      "m(1) %}c{% endcall %}",
      "{{ messages|selectattr('role', 'equalto', 'user')|map(attribute='content')|join(', ') }}",
      "{{ (tools or [])|tojson(indent=2) }}{{ x|default('d') }}{{ messages[::-1]|length }}"};
  const std::filesystem::path dir =
      std::filesystem::path(SY_SOURCE_DIR) / "tests/chat_template/templates";
  std::vector<std::filesystem::path> files;  // sorted: the same corpus on every machine
  for (const auto& entry : std::filesystem::directory_iterator(dir)) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  for (const auto& file : files) {
    std::ifstream in(file, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    corpus.push_back(s.str());
  }
  return corpus;
}

size_t Iterations() {
  const char* env = std::getenv("SY_FUZZ_ITERATIONS");
  return env != nullptr ? std::strtoul(env, nullptr, 10) : 4000;
}

// Renders one case; fails the test unless it renders or is refused with InvalidArgument.
void Check(const std::string& text, const Json& context, size_t* rendered) {
  Limits limits;
  limits.max_steps = 200'000;
  limits.max_output_bytes = 1 << 16;
  auto t = Template::Parse(text, "fuzz", limits);
  if (!t.ok()) {
    ASSERT_TRUE(t.status().IsInvalidArgument()) << t.status().ToString();
    ASSERT_EQ(t.status().message().rfind("fuzz", 0), 0u) << t.status().message();
    return;
  }
  auto out = t->Render(context);
  if (out.ok()) {
    ++*rendered;
    return;
  }
  ASSERT_TRUE(out.status().IsInvalidArgument()) << out.status().ToString() << "\n" << text;
}

TEST(Fuzz, MutatedTemplatesNeverCrash) {
  const std::vector<std::string> corpus = Corpus();
  Fuzzer f(20240801);
  size_t rendered = 0;
  const size_t n = Iterations();
  for (size_t i = 0; i < n; ++i) {
    const std::string text = f.Mutate(corpus[f.Below(corpus.size())]);
    ASSERT_NO_FATAL_FAILURE(Check(text, f.Context(), &rendered)) << "case " << i;
  }
  // Mutations keep many templates valid: rendering paths are exercised, not only errors.
  EXPECT_GT(rendered, n / 20);
}

TEST(Fuzz, TokenSoupNeverCrashes) {
  Fuzzer f(7);
  size_t rendered = 0;
  for (size_t i = 0, n = Iterations(); i < n; ++i) {
    ASSERT_NO_FATAL_FAILURE(Check(f.Soup(), f.Context(), &rendered)) << "case " << i;
  }
}

TEST(Fuzz, RandomContextsOnTheStyleTemplates) {
  const std::vector<std::string> corpus = Corpus();
  Fuzzer f(99);
  size_t rendered = 0;
  for (size_t i = 0, n = Iterations() / 4; i < n; ++i) {
    ASSERT_NO_FATAL_FAILURE(Check(corpus[i % corpus.size()], f.Context(), &rendered));
  }
  EXPECT_GT(rendered, 0u);
}

}  // namespace
}  // namespace switchyard::chat_template
