// BlockTable: the ordered list of blocks of one KV context, and the set of tables.
//
// Entry i holds the block at logical position i of the context: its BlockId, the
// generation the table expects, and its prefix hash (0 for a private block). Tables are
// pure bookkeeping: they do not own the blocks (the BlockManager does); readers present
// the (context, generation) recorded here to BlockManager::Read.
//
// Thread-safety: not thread-safe; owned and used by one thread (the runtime's loop).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/ids.h"
#include "base/result.h"

namespace switchyard::kv_tiers {

struct BlockTableEntry {
  BlockId block;
  uint64_t generation = 0;
  uint64_t prefix_hash = 0;
  uint32_t num_tokens = 0;
};

class BlockTable {
 public:
  BlockTable(std::string context_id, std::string tenant, std::string workflow_id)
      : context_id_(std::move(context_id)),
        tenant_(std::move(tenant)),
        workflow_id_(std::move(workflow_id)) {}

  const std::string& context_id() const { return context_id_; }
  const std::string& tenant() const { return tenant_; }
  const std::string& workflow_id() const { return workflow_id_; }

  size_t size() const { return entries_.size(); }
  uint64_t num_tokens() const;
  void Append(const BlockTableEntry& entry) { entries_.push_back(entry); }
  // OutOfRange naming the index and size when `index` is past the end.
  Result<BlockTableEntry> Get(uint32_t index) const;
  Status Set(uint32_t index, const BlockTableEntry& entry);
  // Drops entries from `size` on; returns the dropped ones (for the caller to release).
  std::vector<BlockTableEntry> Truncate(size_t size);
  // Number of leading entries whose prefix hashes equal `hashes` (shared prefix length).
  size_t MatchPrefix(const std::vector<uint64_t>& hashes) const;
  const std::vector<BlockTableEntry>& entries() const { return entries_; }

 private:
  std::string context_id_;
  std::string tenant_;
  std::string workflow_id_;
  std::vector<BlockTableEntry> entries_;
};

// All tables, by context id.
class BlockTables {
 public:
  // AlreadyExists when the context has a table.
  Result<BlockTable*> Create(const std::string& context_id, const std::string& tenant,
                             const std::string& workflow_id);
  BlockTable* Find(const std::string& context_id);
  // Removes the table and returns its entries (for the caller to release).
  Result<std::vector<BlockTableEntry>> Remove(const std::string& context_id);
  size_t size() const { return tables_.size(); }

 private:
  std::unordered_map<std::string, std::unique_ptr<BlockTable>> tables_;
};

}  // namespace switchyard::kv_tiers
