// sy_spm_tool: sentencepiece in a process of its own (it must not share one with
// libprotobuf, see spm_shim.h), for tests and tools.
//   sy_spm_tool train FLAGS...        trains a model (sentencepiece_trainer's flags)
//   sy_spm_tool encode MODEL TEXT     prints the ids of TEXT, space-separated
#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <cstdio>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  std::vector<std::string> a(argv + 1, argv + argc);
  if (a.size() >= 2 && a[0] == "train") {
    std::string flags;
    for (size_t i = 1; i < a.size(); ++i) flags += (i > 1 ? " " : "") + a[i];
    auto st = sentencepiece::SentencePieceTrainer::Train(flags);
    if (!st.ok()) return std::fprintf(stderr, "train: %s\n", st.ToString().c_str()), 1;
    return 0;
  }
  if (a.size() == 3 && a[0] == "encode") {
    sentencepiece::SentencePieceProcessor sp;
    auto st = sp.Load(a[1]);
    if (!st.ok()) return std::fprintf(stderr, "load: %s\n", st.ToString().c_str()), 1;
    std::vector<int> ids;
    st = sp.Encode(a[2], &ids);
    if (!st.ok()) return std::fprintf(stderr, "encode: %s\n", st.ToString().c_str()), 1;
    for (size_t i = 0; i < ids.size(); ++i) std::printf("%s%d", i ? " " : "", ids[i]);
    std::printf("\n");
    return 0;
  }
  std::fprintf(stderr, "usage: sy_spm_tool train FLAGS... | encode MODEL TEXT\n");
  return 2;
}
