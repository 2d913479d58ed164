// SentencePieceTokenizer over the shim of spm_shim.h, loaded with dlopen.
#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <filesystem>
#include <mutex>

#include "cpu_engine/spm_shim.h"
#include "cpu_engine/tokenizer.h"

namespace switchyard::cpu_engine {
namespace {

// The shim's functions, resolved once per process.
struct Shim {
  decltype(&sy_spm_load) load = nullptr;
  decltype(&sy_spm_free) free = nullptr;
  decltype(&sy_spm_piece_size) piece_size = nullptr;
  decltype(&sy_spm_bos_id) bos_id = nullptr;
  decltype(&sy_spm_eos_id) eos_id = nullptr;
  decltype(&sy_spm_is_control) is_control = nullptr;
  decltype(&sy_spm_encode) encode = nullptr;
  decltype(&sy_spm_decode) decode = nullptr;
  Status status;
};

// Where the shim may be: $SWITCHYARD_SPM_SHIM, beside the executable or in ../lib, the
// build tree's copy, then the loader's search path.
std::vector<std::string> Candidates() {
  std::vector<std::string> out;
  if (const char* env = std::getenv("SWITCHYARD_SPM_SHIM")) out.push_back(env);
  char exe[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n > 0) {
    std::filesystem::path dir = std::filesystem::path(std::string(exe, n)).parent_path();
    out.push_back((dir / "libsy_spm_shim.so").string());
    out.push_back((dir.parent_path() / "lib" / "libsy_spm_shim.so").string());
#ifdef SY_INSTALL_LIBDIR
    out.push_back((dir.parent_path() / SY_INSTALL_LIBDIR / "libsy_spm_shim.so").string());
#endif
  }
#ifdef SY_SPM_SHIM_PATH
  out.push_back(SY_SPM_SHIM_PATH);
#endif
  out.push_back("libsy_spm_shim.so");
  return out;
}

template <typename F>
bool Resolve(void* h, const char* name, F* f) {
  *f = reinterpret_cast<F>(::dlsym(h, name));
  return *f != nullptr;
}

Shim LoadShim() {
  Shim s;
#if defined(__SANITIZE_ADDRESS__)
  s.status = Status::Unavailable(
      "sentencepiece is not loaded under AddressSanitizer (its shim needs RTLD_DEEPBIND, "
      "which ASan does not support)");
  return s;
#else
  std::string tried;
  void* h = nullptr;
  for (const std::string& path : Candidates()) {
    h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
    if (h) break;
    tried += (tried.empty() ? "" : "; ") + std::string(::dlerror());
  }
  if (!h) {
    s.status = Status::Unavailable("the sentencepiece shim libsy_spm_shim.so was not found (" +
                                   tried + "); set SWITCHYARD_SPM_SHIM to its path");
    return s;
  }
  bool ok = Resolve(h, "sy_spm_load", &s.load) && Resolve(h, "sy_spm_free", &s.free) &&
            Resolve(h, "sy_spm_piece_size", &s.piece_size) &&
            Resolve(h, "sy_spm_bos_id", &s.bos_id) && Resolve(h, "sy_spm_eos_id", &s.eos_id) &&
            Resolve(h, "sy_spm_is_control", &s.is_control) &&
            Resolve(h, "sy_spm_encode", &s.encode) && Resolve(h, "sy_spm_decode", &s.decode);
  if (!ok) s.status = Status::Unavailable("the sentencepiece shim lacks a function");
  return s;
#endif
}

const Shim& TheShim() {
  static const Shim shim = LoadShim();
  return shim;
}

class SentencePieceTokenizer : public Tokenizer {
 public:
  SentencePieceTokenizer(const Shim& shim, void* sp) : shim_(shim), sp_(sp) {}
  ~SentencePieceTokenizer() override { shim_.free(sp_); }
  std::string_view name() const override { return "sentencepiece"; }
  int64_t vocab_size() const override { return shim_.piece_size(sp_); }
  int32_t bos_id() const override { return shim_.bos_id(sp_); }
  int32_t eos_id() const override { return shim_.eos_id(sp_); }

  Result<std::vector<int32_t>> Encode(std::string_view text) const override {
    if (int64_t bad = FirstInvalidUtf8(text); bad >= 0)
      return Status::InvalidArgument("text is not valid UTF-8 at byte offset " +
                                     std::to_string(bad));
    std::vector<int32_t> ids(text.size() + 16);
    char err[256];
    for (;;) {
      size_t n = 0;
      if (shim_.encode(sp_, text.data(), text.size(), ids.data(), ids.size(), &n, err,
                       sizeof(err)) != 0)
        return Status::InvalidArgument(std::string("sentencepiece: ") + err);
      if (n <= ids.size()) {
        ids.resize(n);
        return ids;
      }
      ids.resize(n);
    }
  }

  std::string Decode(std::span<const int32_t> ids) const override {
    std::vector<int32_t> keep;
    const int32_t size = shim_.piece_size(sp_);
    for (int32_t id : ids)
      if (id >= 0 && id < size && !shim_.is_control(sp_, id)) keep.push_back(id);
    std::string out(keep.size() * 8 + 16, '\0');
    char err[256];
    for (;;) {
      size_t len = 0;
      if (shim_.decode(sp_, keep.data(), keep.size(), out.data(), out.size(), &len, err,
                       sizeof(err)) != 0)
        return "";
      if (len <= out.size()) {
        out.resize(len);
        return SanitizeUtf8(out);
      }
      out.resize(len);
    }
  }

 private:
  const Shim& shim_;
  void* sp_;
};

}  // namespace

Result<std::unique_ptr<Tokenizer>> LoadSentencePiece(const std::string& model_file) {
  const Shim& shim = TheShim();
  if (!shim.status.ok()) return shim.status;
  char err[512] = {0};
  void* sp = shim.load(model_file.c_str(), err, sizeof(err));
  if (!sp) return Status::InvalidArgument(model_file + ": not a SentencePiece model (" + err + ")");
  return std::unique_ptr<Tokenizer>(new SentencePieceTokenizer(shim, sp));
}

}  // namespace switchyard::cpu_engine
