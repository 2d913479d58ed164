#include "cpu_engine/tokenizer.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include <unistd.h>

namespace switchyard::cpu_engine {
namespace {

namespace fs = std::filesystem;

ModelShape ShapeWithVocab(int64_t vocab) {
  ModelShape s;
  s.vocab_size = vocab;
  return s;
}

TEST(ByteTokenizer, RoundTripsUtf8) {
  ByteTokenizer tok(512);
  EXPECT_EQ(tok.name(), "byte");
  EXPECT_EQ(tok.vocab_size(), 512);
  EXPECT_EQ(tok.bos_id(), 256);
  EXPECT_EQ(tok.eos_id(), 257);
  const std::string text = "Grüße, 世界! 🚂 plain ascii\n\ttab";
  auto ids = tok.Encode(text);
  ASSERT_TRUE(ids.ok()) << ids.status();
  EXPECT_EQ(ids->size(), text.size());
  EXPECT_EQ((*ids)[0], 'G');
  EXPECT_EQ(tok.Decode(*ids), text);
  // Specials and ids past the bytes decode to nothing.
  std::vector<int32_t> with = {256, 'h', 257, 'i', 300, 511, -3};
  EXPECT_EQ(tok.Decode(with), "hi");
  EXPECT_EQ(ByteTokenizer(100).vocab_size(), 258);
}

TEST(ByteTokenizer, RejectsInvalidUtf8NamingTheOffset) {
  ByteTokenizer tok;
  struct Case {
    std::string text;
    int64_t offset;
  } cases[] = {{"ab\xff", 2},
               {"ok \xc3", 3},
               {"\xc0\xaf", 0},            // overlong
               {"x\xed\xa0\x80", 1},       // surrogate
               {"12\xf4\x90\x80\x80", 2},  // past U+10FFFF
               {"\x80", 0}};
  for (const auto& c : cases) {
    auto r = tok.Encode(c.text);
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(r.status().IsInvalidArgument());
    EXPECT_NE(r.status().message().find("offset " + std::to_string(c.offset)), std::string::npos)
        << r.status();
    EXPECT_EQ(FirstInvalidUtf8(c.text), c.offset);
  }
  EXPECT_EQ(FirstInvalidUtf8("é€𝄞"), -1);
}

TEST(ByteTokenizer, DecodesInvalidBytesAsReplacementCharacters) {
  ByteTokenizer tok;
  const std::string fffd = "\xef\xbf\xbd";
  std::vector<int32_t> ids = {'a', 0xff, 'b'};
  EXPECT_EQ(tok.Decode(ids), "a" + fffd + "b");
  ids = {0xe4, 0xb8, 'x'};  // a truncated 3-byte sequence: one U+FFFD for the subpart
  EXPECT_EQ(tok.Decode(ids), fffd + "x");
  ids = {0xed, 0xa0, 0x80};  // a surrogate: each byte is its own maximal subpart
  EXPECT_EQ(tok.Decode(ids), fffd + fffd + fffd);
  ids = {0xf0, 0x9f, 0x9a};  // truncated at the end
  EXPECT_EQ(tok.Decode(ids), fffd);
  EXPECT_EQ(FirstInvalidUtf8(tok.Decode(std::vector<int32_t>{0x80, 0xc3, 0xc3, 0xa9})), -1);
  EXPECT_EQ(SanitizeUtf8("\xc3\xc3\xa9"), fffd + "é");
}

TEST(LoadTokenizer, ByteTokenizerUnlessTheCheckpointHasTokenizerModel) {
  auto t = LoadTokenizer(std::string(SY_SOURCE_DIR) + "/configs/models/tiny-llama-2l.json",
                         ShapeWithVocab(300));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ((*t)->name(), "byte");
  EXPECT_EQ((*t)->vocab_size(), 300);
  EXPECT_TRUE(LoadTokenizer("x.json", ShapeWithVocab(100)).status().IsInvalidArgument());
}

// sentencepiece in its own process (cpu_engine/spm_tool.cc): `args` run, stdout back.
std::string SpmTool(const std::string& args, int* rc) {
  const std::string cmd = std::string(SY_BINARY_DIR) + "/bin/sy_spm_tool " + args + " 2>&1";
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return out;
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof(buf), p)) out.append(buf, n);
  *rc = ::pclose(p);
  return out;
}

// Trains a tiny SentencePiece model (by sentencepiece itself, in sy_spm_tool) into a temp
// checkpoint dir; the tokenizer loads it through the shim and must encode as sentencepiece
// does.
TEST(SentencePieceTokenizer, TrainedTinyModelRoundTrips) {
  const fs::path dir = fs::temp_directory_path() / ("sy_cpu_spm_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  {
    std::ofstream corpus(dir / "corpus.txt");
    for (int i = 0; i < 200; ++i)
      corpus << "the quick brown fox jumps over the lazy dog " << i << "\n"
             << "agents call tools and wait for results while the cache idles\n";
  }
  int rc = -1;
  std::string log = SpmTool("train --input=" + (dir / "corpus.txt").string() +
                                " --model_prefix=" + (dir / "tokenizer").string() +
                                " --vocab_size=320 --model_type=bpe --character_coverage=1.0"
                                " --byte_fallback=true --minloglevel=2",
                            &rc);
  ASSERT_EQ(rc, 0) << log;
#if defined(__SANITIZE_ADDRESS__)
  if (LoadSentencePiece((dir / "tokenizer.model").string()).status().code() ==
      StatusCode::kUnavailable) {
    fs::remove_all(dir);
    GTEST_SKIP() << "sentencepiece is not loaded under AddressSanitizer (RTLD_DEEPBIND)";
  }
#endif
  auto t = LoadTokenizer(dir.string(), ShapeWithVocab(400));
  auto too_big = LoadTokenizer(dir.string(), ShapeWithVocab(300));  // the model's vocab < 320
  EXPECT_TRUE(too_big.status().IsInvalidArgument()) << too_big.status();
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ((*t)->name(), "sentencepiece");
  EXPECT_EQ((*t)->vocab_size(), 320);
  EXPECT_GE((*t)->bos_id(), 0);
  const std::string text = "the lazy fox waits for tools";
  auto ids = (*t)->Encode(text);
  ASSERT_TRUE(ids.ok()) << ids.status();
  EXPECT_LT(ids->size(), text.size());  // merges happened
  std::string ref =
      SpmTool("encode " + (dir / "tokenizer.model").string() + " '" + text + "'", &rc);
  std::string got;
  for (size_t i = 0; i < ids->size(); ++i) got += (i ? " " : "") + std::to_string((*ids)[i]);
  EXPECT_EQ(got + "\n", ref) << "the shim encodes as sentencepiece does";
  EXPECT_EQ((*t)->Decode(*ids), text);
  // Byte fallback covers unseen characters; specials are skipped on decode.
  auto more = (*t)->Encode("zebra ü");
  ASSERT_TRUE(more.ok());
  std::vector<int32_t> with = {(*t)->bos_id()};
  with.insert(with.end(), more->begin(), more->end());
  with.push_back((*t)->eos_id());
  EXPECT_EQ((*t)->Decode(with), "zebra ü");
  EXPECT_FALSE((*t)->Encode("bad \xff").ok());
  fs::remove_all(dir);
}

}  // namespace
}  // namespace switchyard::cpu_engine
