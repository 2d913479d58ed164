#include "kv_tiers/block_table.h"

#include <string>

namespace switchyard::kv_tiers {

uint64_t BlockTable::num_tokens() const {
  uint64_t n = 0;
  for (const auto& e : entries_) n += e.num_tokens;
  return n;
}

Result<BlockTableEntry> BlockTable::Get(uint32_t index) const {
  if (index >= entries_.size()) {
    return Status::OutOfRange("block table '" + context_id_ + "': index " + std::to_string(index) +
                              " past size " + std::to_string(entries_.size()));
  }
  return entries_[index];
}

Status BlockTable::Set(uint32_t index, const BlockTableEntry& entry) {
  if (index >= entries_.size()) {
    return Status::OutOfRange("block table '" + context_id_ + "': index " + std::to_string(index) +
                              " past size " + std::to_string(entries_.size()));
  }
  entries_[index] = entry;
  return Status::OK();
}

std::vector<BlockTableEntry> BlockTable::Truncate(size_t size) {
  if (size >= entries_.size()) return {};
  std::vector<BlockTableEntry> dropped(entries_.begin() + static_cast<ptrdiff_t>(size),
                                       entries_.end());
  entries_.resize(size);
  return dropped;
}

size_t BlockTable::MatchPrefix(const std::vector<uint64_t>& hashes) const {
  size_t n = 0;
  while (n < entries_.size() && n < hashes.size() && entries_[n].prefix_hash != 0 &&
         entries_[n].prefix_hash == hashes[n]) {
    ++n;
  }
  return n;
}

Result<BlockTable*> BlockTables::Create(const std::string& context_id, const std::string& tenant,
                                        const std::string& workflow_id) {
  if (context_id.empty()) return Status::InvalidArgument("block tables: empty context id");
  auto [it, inserted] = tables_.try_emplace(context_id);
  if (!inserted) {
    return Status::AlreadyExists("block tables: context '" + context_id + "' already has a table");
  }
  it->second = std::make_unique<BlockTable>(context_id, tenant, workflow_id);
  return it->second.get();
}

BlockTable* BlockTables::Find(const std::string& context_id) {
  auto it = tables_.find(context_id);
  return it == tables_.end() ? nullptr : it->second.get();
}

Result<std::vector<BlockTableEntry>> BlockTables::Remove(const std::string& context_id) {
  auto it = tables_.find(context_id);
  if (it == tables_.end()) {
    return Status::NotFound("block tables: no table for context '" + context_id + "'");
  }
  std::vector<BlockTableEntry> entries = it->second->entries();
  tables_.erase(it);
  return entries;
}

}  // namespace switchyard::kv_tiers
