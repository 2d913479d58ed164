#include "tokenizer/internal/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

namespace switchyard::tokenizer::internal {

struct Regex::Code {
  pcre2_code* code = nullptr;
  bool jit = false;
  ~Code() { pcre2_code_free(code); }
};

namespace {

std::string ErrorText(int error) {
  PCRE2_UCHAR buf[256];
  pcre2_get_error_message(error, buf, sizeof(buf));
  return reinterpret_cast<const char*>(buf);
}

// Per-thread match state: PCRE2 match data may not be shared between threads, and the JIT
// stack grows up to 64 MiB for long runs of one character class (default: 32 KiB).
struct ThreadMatchState {
  pcre2_match_data* data = pcre2_match_data_create(16, nullptr);
  pcre2_jit_stack* stack = pcre2_jit_stack_create(32 * 1024, 64 * 1024 * 1024, nullptr);
  pcre2_match_context* context = pcre2_match_context_create(nullptr);
  ThreadMatchState() { pcre2_jit_stack_assign(context, nullptr, stack); }
  ~ThreadMatchState() {
    pcre2_match_context_free(context);
    pcre2_jit_stack_free(stack);
    pcre2_match_data_free(data);
  }
};

ThreadMatchState& MatchState() {
  thread_local ThreadMatchState state;
  return state;
}

// The offset one code point past `i` in valid UTF-8.
size_t NextBoundary(std::string_view text, size_t i) {
  ++i;
  while (i < text.size() && (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) ++i;
  return i;
}

}  // namespace

Result<Regex> Regex::Compile(const std::string& pattern) {
  int error = 0;
  PCRE2_SIZE offset = 0;
  auto code = std::make_shared<Code>();
  code->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                             PCRE2_UTF, &error, &offset, nullptr);
  if (code->code == nullptr) {
    return Status::InvalidArgument("PCRE2 cannot compile the pattern: " + ErrorText(error) +
                                   " at offset " + std::to_string(offset));
  }
  code->jit = pcre2_jit_compile(code->code, PCRE2_JIT_COMPLETE) == 0;
  return Regex(pattern, std::move(code));
}

Status Regex::Split(std::string_view text, bool keep_gaps,
                    std::vector<std::string_view>* out) const {
  ThreadMatchState& st = MatchState();
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t prev = 0, from = 0;
  while (from <= text.size()) {
    const int rc = code_->jit ? pcre2_jit_match(code_->code, subject, text.size(), from, 0, st.data,
                                                st.context)
                              : pcre2_match(code_->code, subject, text.size(), from,
                                            PCRE2_NO_UTF_CHECK, st.data, st.context);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) return Status::Internal("pre-tokenizer pattern failed: " + ErrorText(rc));
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(st.data);
    const size_t start = ov[0], end = ov[1];
    if (keep_gaps && start > prev) out->push_back(text.substr(prev, start - prev));
    if (end > start) out->push_back(text.substr(start, end - start));
    prev = end;
    if (end == start) {
      if (end >= text.size()) break;
      from = NextBoundary(text, end);
    } else {
      from = end;
    }
  }
  if (keep_gaps && prev < text.size()) out->push_back(text.substr(prev));
  return Status::OK();
}

}  // namespace switchyard::tokenizer::internal
