#include "tokenizer/internal/added_tokens.h"

#include <algorithm>

#include "tokenizer/internal/unicode.h"

namespace switchyard::tokenizer::internal {

void TokenTrie::Add(std::string_view key, int32_t value) {
  int32_t node = 0;
  for (unsigned char b : key) {
    auto& next = nodes_[node].next;
    auto it = std::find_if(next.begin(), next.end(), [b](const auto& e) { return e.first == b; });
    if (it != next.end()) {
      node = it->second;
      continue;
    }
    const auto child = static_cast<int32_t>(nodes_.size());
    nodes_[node].next.emplace_back(b, child);
    nodes_.emplace_back();
    node = child;
  }
  nodes_[node].value = value;
  if (!key.empty()) first_[static_cast<unsigned char>(key[0])] = true;
}

std::pair<int32_t, size_t> TokenTrie::Longest(std::string_view text, size_t at) const {
  std::pair<int32_t, size_t> best{-1, 0};
  int32_t node = 0;
  for (size_t i = at; i < text.size(); ++i) {
    const auto b = static_cast<unsigned char>(text[i]);
    const auto& next = nodes_[node].next;
    auto it = std::find_if(next.begin(), next.end(), [b](const auto& e) { return e.first == b; });
    if (it == next.end()) break;
    node = it->second;
    if (nodes_[node].value >= 0) best = {nodes_[node].value, i + 1 - at};
  }
  return best;
}

namespace {

// Reads added_tokens[i] into *t.
Status ReadToken(const Json& e, const std::string& file, const std::string& path, AddedToken* t) {
  if (!e.is_object()) return JsonInvalid(file, path, "must be an object");
  auto id = e.find("id");
  if (id == e.end() || !id->is_number_integer() || id->get<int64_t>() < 0 ||
      id->get<int64_t>() > INT32_MAX) {
    return JsonInvalid(file, path + ".id", "must be a token id (an integer >= 0)");
  }
  auto content = e.find("content");
  if (content == e.end() || !content->is_string() || content->get<std::string>().empty()) {
    return JsonInvalid(file, path + ".content", "must be a non-empty string");
  }
  t->id = static_cast<int32_t>(id->get<int64_t>());
  t->content = content->get<std::string>();
  SY_RETURN_IF_ERROR(ReadBool(e, "special", file, path, &t->special));
  t->normalized = !t->special;
  SY_RETURN_IF_ERROR(ReadBool(e, "normalized", file, path, &t->normalized));
  SY_RETURN_IF_ERROR(ReadBool(e, "single_word", file, path, &t->single_word));
  SY_RETURN_IF_ERROR(ReadBool(e, "lstrip", file, path, &t->lstrip));
  SY_RETURN_IF_ERROR(ReadBool(e, "rstrip", file, path, &t->rstrip));
  return Status::OK();
}

}  // namespace

Result<AddedVocabulary> AddedVocabulary::FromJson(const Json& j, const std::string& file,
                                                  const Normalizer& normalizer) {
  AddedVocabulary v;
  if (j.is_null()) return v;
  if (!j.is_array()) return JsonInvalid(file, "added_tokens", "must be an array");
  for (size_t i = 0; i < j.size(); ++i) {
    const std::string path = "added_tokens[" + std::to_string(i) + "]";
    AddedToken t;
    SY_RETURN_IF_ERROR(ReadToken(j[i], file, path, &t));
    if (v.by_id_.count(t.id)) return JsonInvalid(file, path + ".id", "repeats an earlier id");
    v.by_id_[t.id] = v.tokens_.size();
    v.by_content_[t.content] = t.id;
    std::string key = t.content, scratch;
    if (t.normalized) {
      SY_ASSIGN_OR_RETURN(std::string_view n, normalizer.Apply(t.content, &scratch));
      key = std::string(n);
    }
    auto& tries = t.normalized ? v.normalized_ : v.raw_;
    tries[0].Add(key, t.id);
    if (!t.special) tries[1].Add(key, t.id);
    v.tokens_.push_back(std::move(t));
  }
  return v;
}

const AddedToken* AddedVocabulary::Find(int32_t id) const {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &tokens_[it->second];
}

int32_t AddedVocabulary::IdOf(std::string_view content) const {
  auto it = by_content_.find(std::string(content));
  return it == by_content_.end() ? -1 : it->second;
}

void AddedVocabulary::SplitRaw(std::string_view text, bool split_special,
                               std::vector<Segment>* out) const {
  Split(raw_[split_special ? 1 : 0], text, out);
}

void AddedVocabulary::SplitNormalized(std::string_view text, bool split_special,
                                      std::vector<Segment>* out) const {
  Split(normalized_[split_special ? 1 : 0], text, out);
}

void AddedVocabulary::Split(const TokenTrie& trie, std::string_view text,
                            std::vector<Segment>* out) const {
  size_t done = 0;  // end of what is already in *out
  size_t i = 0;
  while (!trie.empty() && i < text.size()) {
    if (!trie.MayStart(static_cast<unsigned char>(text[i]))) {
      ++i;
      continue;
    }
    auto [id, len] = trie.Longest(text, i);
    if (id < 0) {
      ++i;
      continue;
    }
    const AddedToken& t = tokens_[by_id_.at(id)];
    size_t start = i, stop = i + len;
    if (t.single_word) {
      size_t before = 0, after = stop;
      const bool word_before =
          start > 0 && IsWordCharacter(PreviousCodePoint(text, start, &before));
      const bool word_after = stop < text.size() && IsWordCharacter(NextCodePoint(text, &after));
      if (word_before || word_after) {
        i = stop;
        continue;
      }
    }
    if (t.lstrip) start = std::max(start - TrailingWhiteSpace(text.substr(0, start)), done);
    if (t.rstrip) stop += LeadingWhiteSpace(text.substr(stop));
    if (start > done) out->push_back({text.substr(done, start - done), -1});
    out->push_back({text.substr(start, stop - start), id});
    done = i = stop;
  }
  if (done < text.size()) out->push_back({text.substr(done), -1});
}

}  // namespace switchyard::tokenizer::internal
