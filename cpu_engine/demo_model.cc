// The embedded demo model and LoadModelShape (model_shape.h).
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <filesystem>

#include "cpu_engine/model_shape.h"

namespace switchyard::cpu_engine {

// configs/models/demo-qwen3-random.json, embedded at build time (cmake/EmbedText.cmake).
extern const char kDemoShapeJson[];
extern const unsigned long kDemoShapeJsonSize;

namespace {

namespace fs = std::filesystem;

// Where the demo model's tokenizer may be, in the order they are tried.
std::vector<std::string> DemoTokenizerPaths() {
  std::vector<std::string> out;
  if (const char* env = std::getenv("SWITCHYARD_DEMO_TOKENIZER"); env && *env) out.push_back(env);
  char exe[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n > 0) {
    const fs::path bin = fs::path(std::string(exe, static_cast<size_t>(n))).parent_path();
    out.push_back((bin.parent_path() / "share/switchyard/demo-tokenizer").string());
  }
#ifdef SY_DEMO_TOKENIZER_DIR
  out.push_back(SY_DEMO_TOKENIZER_DIR);
#endif
  return out;
}

}  // namespace

Result<ModelShape> DemoShape() {
  SY_ASSIGN_OR_RETURN(ModelShape s, ParseShapeFile(std::string(kDemoShapeJson, kDemoShapeJsonSize),
                                                   std::string("configs/models/") + kDemoModel +
                                                       ".json (embedded)"));
  s.tokenizer_paths = DemoTokenizerPaths();
  return s;
}

Result<ModelShape> LoadModelShape(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return LoadHfConfig((fs::path(path) / "config.json").string());
  if (path == kDemoModel && !fs::exists(path, ec)) return DemoShape();
  return LoadShapeFile(path);
}

}  // namespace switchyard::cpu_engine
