// The text rewrites @huggingface/jinja applies before tokenizing: see preprocess.h.
#include "chat_template/internal/preprocess.h"

#include <algorithm>

#include "chat_template/internal/utf.h"

namespace switchyard::chat_template::internal {
namespace {

void Copy(const MappedText& in, size_t from, size_t to, MappedText* out) {
  out->text.append(in.text, from, to - from);
  out->origin.insert(out->origin.end(), in.origin.begin() + static_cast<ptrdiff_t>(from),
                     in.origin.begin() + static_cast<ptrdiff_t>(to));
}

// Where a JavaScript /^/m matches: the start, or after \n, \r, U+2028 or U+2029.
bool AtLineStart(const std::string& s, size_t i) {
  if (i == 0) return true;
  const char p = s[i - 1];
  if (p == '\n' || p == '\r') return true;
  return i >= 3 &&
         (s.compare(i - 3, 3, "\xE2\x80\xA8") == 0 || s.compare(i - 3, 3, "\xE2\x80\xA9") == 0);
}

// lstrip_blocks: /^[ \t]*({[#%-])/gm -> "$1".
MappedText LstripBlocks(const MappedText& in) {
  MappedText out;
  const std::string& t = in.text;
  size_t i = 0;
  while (i < t.size()) {
    if (AtLineStart(t, i)) {
      size_t j = i;
      while (j < t.size() && (t[j] == ' ' || t[j] == '\t')) ++j;
      if (j > i && j + 1 < t.size() && t[j] == '{' &&
          (t[j + 1] == '#' || t[j + 1] == '%' || t[j + 1] == '-')) {
        i = j;
      }
    }
    Copy(in, i, i + 1, &out);
    ++i;
  }
  return out;
}

// trim_blocks: /([#%-]})\n/g -> "$1".
MappedText TrimBlocks(const MappedText& in) {
  MappedText out;
  const std::string& t = in.text;
  size_t i = 0;
  while (i < t.size()) {
    const char c = t[i];
    if ((c == '#' || c == '%' || c == '-') && i + 2 < t.size() && t[i + 1] == '}' &&
        t[i + 2] == '\n') {
      Copy(in, i, i + 2, &out);
      i += 3;
      continue;
    }
    Copy(in, i, i + 1, &out);
    ++i;
  }
  return out;
}

size_t SkipSpaces(const std::string& t, size_t i) {
  while (i < t.size()) {
    uint32_t cp = 0;
    const size_t n = DecodeUtf8(t, i, &cp);
    if (!IsJsSpace(cp)) break;
    i += n;
  }
  return i;
}

struct GenerationTag {
  bool lstrip = false;
  bool rstrip = false;
  size_t after_start = 0;  // the whitespace after the tag: [after_start, end)
  size_t end = 0;
};

// /{%(-?)\s*(?:end)?generation\s*(-?)%}(\s*)/ at p.
bool MatchGeneration(const std::string& t, size_t p, GenerationTag* tag) {
  if (t.compare(p, 2, "{%") != 0) return false;
  size_t i = p + 2;
  tag->lstrip = i < t.size() && t[i] == '-';
  if (tag->lstrip) ++i;
  i = SkipSpaces(t, i);
  if (t.compare(i, 3, "end") == 0 && t.compare(i + 3, 10, "generation") == 0) i += 3;
  if (t.compare(i, 10, "generation") != 0) return false;
  i = SkipSpaces(t, i + 10);
  tag->rstrip = i < t.size() && t[i] == '-';
  if (tag->rstrip) ++i;
  if (t.compare(i, 2, "%}") != 0) return false;
  tag->after_start = i + 2;
  tag->end = SkipSpaces(t, i + 2);
  return true;
}

MappedText RemoveGenerationTags(const MappedText& in) {
  MappedText out;
  const std::string& t = in.text;
  size_t last = 0;
  for (size_t p = t.find("{%"); p != std::string::npos; p = t.find("{%", p + 1)) {
    GenerationTag tag;
    if (p < last || !MatchGeneration(t, p, &tag)) continue;
    size_t end = p;
    while (tag.lstrip && end > last) {
      const size_t start = PrevCodePointStart(t, end);
      uint32_t cp = 0;
      DecodeUtf8(t, start, &cp);
      if (!IsJsSpace(cp) || start < last) break;
      end = start;
    }
    Copy(in, last, end, &out);
    if (!tag.rstrip) Copy(in, tag.after_start, tag.end, &out);
    last = tag.end;
  }
  Copy(in, last, t.size(), &out);
  return out;
}

}  // namespace

MappedText Preprocess(std::string_view source) {
  MappedText text;
  text.text.assign(source);
  if (!text.text.empty() && text.text.back() == '\n') text.text.pop_back();
  text.origin.resize(text.text.size());
  for (size_t i = 0; i < text.origin.size(); ++i) text.origin[i] = static_cast<uint32_t>(i);
  return RemoveGenerationTags(TrimBlocks(LstripBlocks(text)));
}

SourceIndex::SourceIndex(std::string_view source) : source_(source) {
  line_starts_.push_back(0);
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\n') line_starts_.push_back(i + 1);
  }
}

Pos SourceIndex::At(size_t offset) const {
  offset = std::min(offset, source_.size());
  const auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
  const size_t line = static_cast<size_t>(it - line_starts_.begin());
  const size_t start = line_starts_[line - 1];
  uint32_t column = 1;
  for (size_t i = start; i < offset; ++i) {
    if ((static_cast<unsigned char>(source_[i]) & 0xC0) != 0x80) ++column;
  }
  return Pos{static_cast<uint32_t>(line), column};
}

}  // namespace switchyard::chat_template::internal
