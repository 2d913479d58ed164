#include "cpu_engine/spm_shim.h"

#include <sentencepiece_processor.h>

#include <cstring>
#include <string>
#include <vector>

namespace {
int Fail(const std::string& what, char* err, size_t err_len) {
  if (err && err_len > 0) {
    size_t n = std::min(what.size(), err_len - 1);
    std::memcpy(err, what.data(), n);
    err[n] = '\0';
  }
  return -1;
}
sentencepiece::SentencePieceProcessor* P(void* sp) {
  return static_cast<sentencepiece::SentencePieceProcessor*>(sp);
}
}  // namespace

extern "C" {

void* sy_spm_load(const char* path, char* err, size_t err_len) {
  auto* sp = new sentencepiece::SentencePieceProcessor();
  auto st = sp->Load(path);
  if (!st.ok()) {
    Fail(st.ToString(), err, err_len);
    delete sp;
    return nullptr;
  }
  return sp;
}

void sy_spm_free(void* sp) { delete P(sp); }
int32_t sy_spm_piece_size(void* sp) { return P(sp)->GetPieceSize(); }
int32_t sy_spm_bos_id(void* sp) { return P(sp)->bos_id(); }
int32_t sy_spm_eos_id(void* sp) { return P(sp)->eos_id(); }
int sy_spm_is_control(void* sp, int32_t id) { return P(sp)->IsControl(id) ? 1 : 0; }

int sy_spm_encode(void* sp, const char* text, size_t len, int32_t* out, size_t cap, size_t* n,
                  char* err, size_t err_len) {
  std::vector<int> ids;
  auto st = P(sp)->Encode(std::string_view(text, len), &ids);
  if (!st.ok()) return Fail(st.ToString(), err, err_len);
  *n = ids.size();
  for (size_t i = 0; i < ids.size() && i < cap; ++i) out[i] = ids[i];
  return 0;
}

int sy_spm_decode(void* sp, const int32_t* ids, size_t n, char* out, size_t cap, size_t* len,
                  char* err, size_t err_len) {
  std::vector<int> v(ids, ids + n);
  std::string text;
  auto st = P(sp)->Decode(v, &text);
  if (!st.ok()) return Fail(st.ToString(), err, err_len);
  *len = text.size();
  std::memcpy(out, text.data(), std::min(cap, text.size()));
  return 0;
}
}
