// libFuzzer entry point for the optional program_graph_fuzzer target (clang only).
#include <cstdio>
#include <cstdlib>

#include "tests/program_graph/json_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto outcome = switchyard::program_graph::FuzzWorkflowJson(data, size);
  if (!outcome.violation.empty()) {
    std::fprintf(stderr, "invariant violated: %s\n", outcome.violation.c_str());
    std::abort();
  }
  return 0;
}
