// vLLM KV event batches in msgpack (array or map form) and the block index they build
// (kv_events.h).
#include "upstream/kv_events.h"

#include <msgpack.hpp>

#include <algorithm>
#include <utility>

#include "kv_tiers/prefix_hash.h"

namespace switchyard::upstream {
namespace {

using Obj = msgpack::object;

std::string_view TextOf(const Obj& o) {
  if (o.type == msgpack::type::STR) return {o.via.str.ptr, o.via.str.size};
  if (o.type == msgpack::type::BIN) return {o.via.bin.ptr, o.via.bin.size};
  return {};
}

// A block hash as a key: a digest's bytes, or "#<n>" for an integer.
Result<std::string> HashKey(const Obj& o) {
  switch (o.type) {
    case msgpack::type::STR:
    case msgpack::type::BIN:
      return std::string(TextOf(o));
    case msgpack::type::POSITIVE_INTEGER:
      return "#" + std::to_string(o.via.u64);
    case msgpack::type::NEGATIVE_INTEGER:
      return "#" + std::to_string(o.via.i64);
    default:
      return Status::InvalidArgument("a block hash is neither bytes nor an integer");
  }
}

Result<int64_t> IntOf(const Obj& o, const char* what) {
  if (o.type == msgpack::type::POSITIVE_INTEGER) return static_cast<int64_t>(o.via.u64);
  if (o.type == msgpack::type::NEGATIVE_INTEGER) return o.via.i64;
  return Status::InvalidArgument(std::string(what) + " is not an integer");
}

Status ReadHashes(const Obj& o, std::vector<std::string>* out) {
  if (o.type != msgpack::type::ARRAY) return Status::InvalidArgument("block_hashes is not a list");
  for (uint32_t i = 0; i < o.via.array.size; ++i) {
    SY_ASSIGN_OR_RETURN(std::string h, HashKey(o.via.array.ptr[i]));
    out->push_back(std::move(h));
  }
  return Status::OK();
}

Status ReadTokens(const Obj& o, std::vector<int32_t>* out) {
  if (o.type != msgpack::type::ARRAY) return Status::InvalidArgument("token_ids is not a list");
  out->reserve(o.via.array.size);
  for (uint32_t i = 0; i < o.via.array.size; ++i) {
    SY_ASSIGN_OR_RETURN(int64_t t, IntOf(o.via.array.ptr[i], "a token id"));
    out->push_back(static_cast<int32_t>(t));
  }
  return Status::OK();
}

// An event's fields by name, from either form: the array's positions are the struct's
// field order after the tag.
class Fields {
 public:
  Fields(const Obj& o, std::vector<const char*> order) {
    if (o.type == msgpack::type::ARRAY) {
      for (uint32_t i = 1; i < o.via.array.size && i - 1 < order.size(); ++i)
        by_name_[order[i - 1]] = &o.via.array.ptr[i];
    } else {
      for (uint32_t i = 0; i < o.via.map.size; ++i)
        by_name_[std::string(TextOf(o.via.map.ptr[i].key))] = &o.via.map.ptr[i].val;
    }
  }
  // nullptr when absent or nil (an omitted default).
  const Obj* Get(const std::string& name) const {
    auto it = by_name_.find(name);
    return it == by_name_.end() || it->second->type == msgpack::type::NIL ? nullptr : it->second;
  }

 private:
  std::map<std::string, const Obj*> by_name_;
};

Result<KvEvent> ReadStored(const Obj& o) {
  Fields f(o,
           {"block_hashes", "parent_block_hash", "token_ids", "block_size", "lora_id", "medium"});
  KvEvent e;
  e.kind = KvEvent::Kind::kStored;
  const Obj* hashes = f.Get("block_hashes");
  const Obj* tokens = f.Get("token_ids");
  const Obj* size = f.Get("block_size");
  if (!hashes || !tokens || !size)
    return Status::InvalidArgument("BlockStored lacks block_hashes, token_ids or block_size");
  SY_RETURN_IF_ERROR(ReadHashes(*hashes, &e.block_hashes));
  SY_RETURN_IF_ERROR(ReadTokens(*tokens, &e.token_ids));
  SY_ASSIGN_OR_RETURN(e.block_size, IntOf(*size, "block_size"));
  if (const Obj* p = f.Get("parent_block_hash")) {
    SY_ASSIGN_OR_RETURN(e.parent, HashKey(*p));
  }
  if (const Obj* m = f.Get("medium")) e.medium = std::string(TextOf(*m));
  if (e.block_size <= 0 ||
      e.token_ids.size() != e.block_hashes.size() * static_cast<size_t>(e.block_size))
    return Status::InvalidArgument("BlockStored: " + std::to_string(e.token_ids.size()) +
                                   " token ids for " + std::to_string(e.block_hashes.size()) +
                                   " blocks of " + std::to_string(e.block_size));
  return e;
}

Result<KvEvent> ReadRemoved(const Obj& o) {
  Fields f(o, {"block_hashes", "medium"});
  KvEvent e;
  e.kind = KvEvent::Kind::kRemoved;
  const Obj* hashes = f.Get("block_hashes");
  if (!hashes) return Status::InvalidArgument("BlockRemoved lacks block_hashes");
  SY_RETURN_IF_ERROR(ReadHashes(*hashes, &e.block_hashes));
  if (const Obj* m = f.Get("medium")) e.medium = std::string(TextOf(*m));
  return e;
}

// The event's type: an array's first element, a map's "type".
std::string_view TypeOf(const Obj& o) {
  if (o.type == msgpack::type::ARRAY) return o.via.array.size > 0 ? TextOf(o.via.array.ptr[0]) : "";
  if (o.type != msgpack::type::MAP) return "";
  for (uint32_t i = 0; i < o.via.map.size; ++i)
    if (TextOf(o.via.map.ptr[i].key) == "type") return TextOf(o.via.map.ptr[i].val);
  return "";
}

Status ReadEvents(const Obj& list, KvEventBatch* out) {
  if (list.type != msgpack::type::ARRAY) return Status::InvalidArgument("events is not a list");
  for (uint32_t i = 0; i < list.via.array.size; ++i) {
    const Obj& o = list.via.array.ptr[i];
    const std::string_view type = TypeOf(o);
    Result<KvEvent> e = Status::NotFound("");
    if (type == "BlockStored") {
      e = ReadStored(o);
    } else if (type == "BlockRemoved") {
      e = ReadRemoved(o);
    } else if (type == "AllBlocksCleared") {
      e = KvEvent{.kind = KvEvent::Kind::kCleared};
    } else {
      continue;  // a newer engine's event: not ours to read
    }
    if (!e.ok()) return e.status().Annotate("event " + std::to_string(i));
    out->events.push_back(std::move(*e));
  }
  return Status::OK();
}

}  // namespace

Result<KvEventBatch> DecodeKvEventBatch(std::string_view payload) {
  msgpack::object_handle handle;
  try {
    handle = msgpack::unpack(payload.data(), payload.size());
  } catch (const std::exception& ex) {
    return Status::InvalidArgument(std::string("KV event batch is not msgpack: ") + ex.what());
  }
  const Obj& root = handle.get();
  KvEventBatch out;
  Fields f(root, {});
  const Obj *ts = nullptr, *events = nullptr, *rank = nullptr;
  if (root.type == msgpack::type::ARRAY) {
    const uint32_t n = root.via.array.size;
    if (n >= 1) ts = &root.via.array.ptr[0];
    if (n >= 2) events = &root.via.array.ptr[1];
    if (n >= 3 && root.via.array.ptr[2].type != msgpack::type::NIL) rank = &root.via.array.ptr[2];
  } else if (root.type == msgpack::type::MAP) {
    ts = f.Get("ts");
    events = f.Get("events");
    rank = f.Get("data_parallel_rank");
  }
  if (!events) return Status::InvalidArgument("KV event batch has no events list");
  if (ts && (ts->type == msgpack::type::FLOAT64 || ts->type == msgpack::type::FLOAT32))
    out.ts = ts->via.f64;
  if (rank) {
    SY_ASSIGN_OR_RETURN(out.data_parallel_rank, IntOf(*rank, "data_parallel_rank"));
  }
  SY_RETURN_IF_ERROR(ReadEvents(*events, &out));
  return out;
}

KvBlockIndex::Medium& KvBlockIndex::Of(const std::string& medium) {
  return media_[medium.empty() ? std::string("GPU") : medium];
}

void KvBlockIndex::Apply(const KvEvent& e) {
  if (e.kind == KvEvent::Kind::kCleared) {
    media_.clear();
    return;
  }
  Medium& m = Of(e.medium);
  if (e.kind == KvEvent::Kind::kRemoved) {
    for (const std::string& h : e.block_hashes) {
      auto it = m.chain_of.find(h);
      if (it == m.chain_of.end()) continue;
      auto held = m.held.find(it->second);
      if (held != m.held.end() && --held->second == 0) m.held.erase(held);
      m.chain_of.erase(it);
    }
    return;
  }
  block_size_ = e.block_size;
  uint64_t chain = kv_tiers::kPrefixRootHash;
  if (!e.parent.empty()) {  // the parent's chain, on whichever medium the index saw it
    bool found = false;
    for (const auto& [name, other] : media_)
      if (auto it = other.chain_of.find(e.parent); it != other.chain_of.end())
        chain = it->second, found = true;
    if (!found) {
      unchained_ += e.block_hashes.size();
      return;
    }
  }
  const auto size = static_cast<size_t>(e.block_size);
  for (size_t i = 0; i < e.block_hashes.size(); ++i) {
    chain = kv_tiers::ChainedBlockHash(
        chain, std::span<const int32_t>(e.token_ids.data() + i * size, size));
    auto [it, fresh] = m.chain_of.emplace(e.block_hashes[i], chain);
    if (fresh) ++m.held[chain];
  }
}

int64_t KvBlockIndex::HeldPrefixTokens(std::span<const int32_t> tokens,
                                       std::string_view medium) const {
  auto m = media_.find(medium);
  if (m == media_.end() || block_size_ <= 0) return 0;
  const auto size = static_cast<size_t>(block_size_);
  uint64_t chain = kv_tiers::kPrefixRootHash;
  int64_t held = 0;
  for (size_t at = 0; at + size <= tokens.size(); at += size) {
    chain = kv_tiers::ChainedBlockHash(chain, tokens.subspan(at, size));
    if (!m->second.held.count(chain)) break;
    held += block_size_;
  }
  return held;
}

size_t KvBlockIndex::blocks(std::string_view medium) const {
  auto m = media_.find(medium);
  return m == media_.end() ? 0 : m->second.chain_of.size();
}

}  // namespace switchyard::upstream
