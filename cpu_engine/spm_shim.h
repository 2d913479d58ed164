// The SentencePiece shim: a small shared library (libsy_spm_shim.so) that wraps
// sentencepiece behind a C interface, loaded at run time with dlopen(RTLD_LOCAL |
// RTLD_DEEPBIND) by the tokenizer (tokenizer.cc).
//
// Why: Debian's libsentencepiece.so.0 carries its own copy of protobuf-lite and exports
// its symbols; linked into a process that also uses libprotobuf (Switchyard's schema) it
// interposes them and the process crashes while libprotobuf registers its descriptors at
// start-up. Loaded locally with deep binding, sentencepiece resolves to its own copy and
// libprotobuf never sees it. Deep binding has one known cost: sentencepiece then sees
// libstdc++'s own std::cout / std::cerr, not the executable's initialised copies, so only
// paths that do not print are used here (load, encode, decode); training runs in its own
// process (spm_tool.cc).
//
// Every function returns 0 on success, else -1 with a message in `err` (NUL-terminated,
// at most err_len bytes).
#pragma once

#include <cstddef>
#include <cstdint>

extern "C" {
// A processor loaded from a tokenizer.model file, or null.
void* sy_spm_load(const char* path, char* err, size_t err_len);
void sy_spm_free(void* sp);
int32_t sy_spm_piece_size(void* sp);
int32_t sy_spm_bos_id(void* sp);
int32_t sy_spm_eos_id(void* sp);
int sy_spm_is_control(void* sp, int32_t id);
// Encodes `len` bytes of text; writes up to `cap` ids into `out` and their count into
// *n (when *n > cap, call again with room for *n).
int sy_spm_encode(void* sp, const char* text, size_t len, int32_t* out, size_t cap, size_t* n,
                  char* err, size_t err_len);
// Decodes `n` ids; writes up to `cap` bytes into `out` and the length into *len.
int sy_spm_decode(void* sp, const int32_t* ids, size_t n, char* out, size_t cap, size_t* len,
                  char* err, size_t err_len);
}
