#include "tokenizer/internal/bpe_model.h"

#include <algorithm>
#include <climits>

#include "tokenizer/internal/byte_level.h"

namespace switchyard::tokenizer::internal {

void MergeTable::Reserve(size_t n) {
  size_t cap = 16;
  shift_ = 60;
  while (cap < 2 * n) cap <<= 1, --shift_;
  slots_.assign(cap, Slot{});
}

void MergeTable::Put(int32_t left, int32_t right, Merge m) {
  const uint64_t key = (static_cast<uint64_t>(left) << 32) | static_cast<uint32_t>(right);
  for (size_t i = SlotOf(key);; i = (i + 1) & (slots_.size() - 1)) {
    if (slots_[i].key == kEmpty || slots_[i].key == key) {
      slots_[i] = {key, m};
      return;
    }
  }
}

MergeTable::Merge MergeTable::Find(int32_t left, int32_t right) const {
  if (left < 0 || right < 0 || slots_.empty()) return {};
  const uint64_t key = (static_cast<uint64_t>(left) << 32) | static_cast<uint32_t>(right);
  for (size_t i = SlotOf(key);; i = (i + 1) & (slots_.size() - 1)) {
    if (slots_[i].key == key) return slots_[i].value;
    if (slots_[i].key == kEmpty) return {};
  }
}

namespace {

// Refuses the BPE options this implementation does not have (each by its JSON path).
Status CheckOptions(const Json& m, const std::string& file) {
  auto type = m.find("type");
  if (type == m.end() || !type->is_string() || *type != "BPE") {
    return JsonUnsupported(file, "model.type",
                           (type == m.end() ? std::string("missing") : Describe(*type)) +
                               " is not supported (supported: \"BPE\")");
  }
  auto set = [&](const char* key) {
    auto it = m.find(key);
    return it != m.end() && !it->is_null() && *it != false && *it != "";
  };
  for (const char* key : {"dropout", "byte_fallback", "fuse_unk", "continuing_subword_prefix",
                          "end_of_word_suffix", "continuing_subword_suffix"}) {
    if (set(key)) {
      return JsonUnsupported(file, std::string("model.") + key,
                             Describe(m[key]) + " is not supported (byte-level BPE without it)");
    }
  }
  return Status::OK();
}

}  // namespace

Result<std::unique_ptr<BpeModel>> BpeModel::FromJson(const Json& m, const std::string& file) {
  if (!m.is_object()) return JsonInvalid(file, "model", "must be an object");
  SY_RETURN_IF_ERROR(CheckOptions(m, file));
  std::unique_ptr<BpeModel> model(new BpeModel());
  SY_RETURN_IF_ERROR(ReadBool(m, "ignore_merges", file, "model", &model->ignore_merges_));
  auto vocab = m.find("vocab");
  if (vocab == m.end() || !vocab->is_object()) {
    return JsonInvalid(file, "model.vocab", "must be an object of token → id");
  }
  TextIds ids;
  SY_RETURN_IF_ERROR(model->ReadVocab(*vocab, file, &ids));
  auto merges = m.find("merges");
  if (merges == m.end() || !merges->is_array()) {
    return JsonInvalid(file, "model.merges", "must be an array");
  }
  SY_RETURN_IF_ERROR(model->ReadMerges(*merges, file, ids));
  auto unk = m.find("unk_token");
  if (unk != m.end() && !unk->is_null()) {
    auto it = unk->is_string() ? ids.find(unk->get_ref<const std::string&>()) : ids.end();
    if (it == ids.end()) {
      return JsonInvalid(file, "model.unk_token", Describe(*unk) + " is not in model.vocab");
    }
    model->unk_id_ = it->second;
  }
  return model;
}

Status BpeModel::ReadVocab(const Json& vocab, const std::string& file, TextIds* ids) {
  int64_t max_id = -1;
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    if (!it.value().is_number_integer() || it.value().get<int64_t>() < 0 ||
        it.value().get<int64_t>() >= INT32_MAX) {
      return JsonInvalid(file, "model.vocab[" + Describe(it.key()) + "]",
                         "must be a token id (an integer >= 0)");
    }
    max_id = std::max(max_id, it.value().get<int64_t>());
  }
  std::vector<std::string> bytes(max_id + 1);
  present_.assign(max_id + 1, false);
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    const auto id = static_cast<int32_t>(it.value().get<int64_t>());
    if (present_[id]) {
      return JsonInvalid(file, "model.vocab[" + Describe(it.key()) + "]",
                         "repeats the id " + std::to_string(id));
    }
    present_[id] = true;
    ids->emplace(it.key(), id);
    auto raw = ByteLevelToBytes(it.key());
    bytes[id] = raw ? std::move(*raw) : it.key();  // outside the alphabet: its own UTF-8
  }
  offsets_.assign(1, 0);
  for (const auto& b : bytes) {
    arena_.insert(arena_.end(), b.begin(), b.end());
    offsets_.push_back(static_cast<uint32_t>(arena_.size()));
  }
  byte_id_.fill(-1);
  size_t slots = 16;
  while (slots < 2 * vocab.size()) slots <<= 1;
  index_.assign(slots, Slot{});
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    const auto id = static_cast<int32_t>(it.value().get<int64_t>());
    if (!ByteLevelToBytes(it.key())) continue;  // BPE never makes it from bytes
    IndexBytes(id);
    const std::string_view b = TokenBytes(id);
    if (b.size() == 1) byte_id_[static_cast<unsigned char>(b[0])] = id;
  }
  return Status::OK();
}

void BpeModel::IndexBytes(int32_t id) {
  const std::string_view b = TokenBytes(id);
  const uint64_t hash = HashBytes(b);
  if (IdOfBytes(b, hash) >= 0) return;
  const size_t mask = index_.size() - 1;
  size_t i = hash & mask;
  while (index_[i].id >= 0) i = (i + 1) & mask;
  index_[i] = {static_cast<uint32_t>(hash >> 32), id};
}

int32_t BpeModel::IdOfBytes(std::string_view bytes, uint64_t hash) const {
  const size_t mask = index_.size() - 1;
  const auto tag = static_cast<uint32_t>(hash >> 32);
  for (size_t i = hash & mask;; i = (i + 1) & mask) {
    const Slot& s = index_[i];
    if (s.id < 0) return -1;
    if (s.tag == tag && TokenBytes(s.id) == bytes) return s.id;
  }
}

Status BpeModel::ReadMerges(const Json& merges, const std::string& file, const TextIds& ids) {
  merges_.Reserve(merges.size());
  std::string left, right;
  for (size_t i = 0; i < merges.size(); ++i) {
    const Json& e = merges[i];
    const std::string path = "model.merges[" + std::to_string(i) + "]";
    if (e.is_string()) {
      const std::string& s = e.get_ref<const std::string&>();
      const size_t space = s.find(' ');
      if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos) {
        return JsonInvalid(file, path, Describe(e) + " is not \"left right\"");
      }
      left = s.substr(0, space);
      right = s.substr(space + 1);
    } else if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string()) {
      left = e[0].get<std::string>();
      right = e[1].get<std::string>();
    } else {
      return JsonInvalid(file, path, Describe(e) + " is neither \"left right\" nor [left, right]");
    }
    auto l = ids.find(left), r = ids.find(right), m = ids.find(left + right);
    if (l == ids.end() || r == ids.end() || m == ids.end()) {
      return JsonInvalid(file, path,
                         Describe(e) + ": a part or the merged token is not in model.vocab");
    }
    merges_.Put(l->second, r->second, {static_cast<int32_t>(i), m->second});
  }
  return Status::OK();
}

std::string_view BpeModel::TokenBytes(int32_t id) const {
  if (!Has(id)) return {};
  return {arena_.data() + offsets_[id], offsets_[id + 1] - offsets_[id]};
}

int32_t BpeModel::IdOfText(std::string_view text) const {
  auto bytes = ByteLevelToBytes(text);
  if (!bytes) return -1;
  return IdOfBytes(*bytes, HashBytes(*bytes));
}

}  // namespace switchyard::tokenizer::internal
