#include "executors/registered_kv.h"

#include <algorithm>
#include <charconv>
#include <functional>

#include "executors/engine.h"
#include "executors/internal/kv_device.h"

namespace switchyard::executors {
namespace {

// "cpu" -> -1, "cuda:N" -> N; InvalidArgument naming `where` otherwise.
Result<int> ParseDevice(const std::string& device, const std::string& where) {
  if (device == "cpu") return -1;
  const std::string prefix = "cuda:";
  if (device.compare(0, prefix.size(), prefix) == 0 && device.size() > prefix.size()) {
    int n = -1;
    const char* begin = device.data() + prefix.size();
    const char* end = device.data() + device.size();
    auto [p, ec] = std::from_chars(begin, end, n);
    if (ec == std::errc() && p == end && n >= 0) return n;
  }
  return Status::InvalidArgument(where + ": device '" + device + "' is neither 'cpu' nor 'cuda:N'");
}

}  // namespace

Result<std::unique_ptr<RegisteredKvPool>> RegisteredKvPool::Create(Options o) {
  if (o.block_bytes == 0)
    return Status::InvalidArgument("KV pool '" + o.name + "': block_bytes must be > 0");
  if (o.block_tokens < 1)
    return Status::InvalidArgument("KV pool '" + o.name + "': block_tokens must be >= 1");
  if (o.regions.empty())
    return Status::InvalidArgument("KV pool '" + o.name + "': no memory regions registered");
  std::unique_ptr<RegisteredKvPool> pool(new RegisteredKvPool(std::move(o)));
  const Options& opt = pool->options_;
  std::vector<std::pair<uintptr_t, uintptr_t>> spans;  // [begin, end) per region
  for (size_t i = 0; i < opt.regions.size(); ++i) {
    const KvMemoryRegion& r = opt.regions[i];
    const std::string where = "KV pool '" + opt.name + "' region " + std::to_string(i);
    SY_ASSIGN_OR_RETURN(int device, ParseDevice(r.device, where));
    if (!r.address) return Status::InvalidArgument(where + ": address is null");
    if (r.length < opt.block_bytes)
      return Status::InvalidArgument(where + ": " + std::to_string(r.length) +
                                     " bytes hold no block of " + std::to_string(opt.block_bytes));
    if (device >= 0) SY_RETURN_IF_ERROR(internal::CheckCudaDevice(device, where));
    uintptr_t begin = reinterpret_cast<uintptr_t>(r.address);
    for (size_t k = 0; k < spans.size(); ++k)
      if (opt.regions[k].device == r.device && spans[k].first < begin + r.length &&
          begin < spans[k].second)
        return Status::InvalidArgument(where + " overlaps region " + std::to_string(k));
    spans.emplace_back(begin, begin + r.length);
    for (uint64_t off = 0; off + opt.block_bytes <= r.length; off += opt.block_bytes)
      pool->slots_.push_back(Slot{static_cast<char*>(r.address) + off, device});
    if (device >= 0) pool->host_only_ = false;
  }
  pool->free_.reserve(pool->slots_.size());
  for (size_t s = pool->slots_.size(); s-- > 0;) pool->free_.push_back(static_cast<uint32_t>(s));
  return pool;
}

RegisteredKvPool::~RegisteredKvPool() = default;

Status RegisteredKvPool::Resize(const std::string& context, int64_t tokens) {
  if (tokens <= 0) {
    auto it = ctxs_.find(context);
    if (it == ctxs_.end()) return Status::OK();
    for (uint32_t s : it->second.slots) {
      free_.push_back(s);
      staging_.erase(s);
    }
    ctxs_.erase(it);
    return Status::OK();
  }
  const size_t need = static_cast<size_t>(BlocksFor(tokens, options_.block_tokens));
  auto it = ctxs_.find(context);
  const size_t have = it == ctxs_.end() ? 0 : it->second.slots.size();
  if (need > have && need - have > free_.size())
    return Status::ResourceExhausted("KV pool '" + options_.name + "': " + context + " needs " +
                                     std::to_string(need - have) + " more blocks, " +
                                     std::to_string(free_.size()) + " free");
  Ctx& c = ctxs_[context];
  while (c.slots.size() < need) {
    c.slots.push_back(free_.back());
    free_.pop_back();
  }
  while (c.slots.size() > need) {
    free_.push_back(c.slots.back());
    staging_.erase(c.slots.back());
    c.slots.pop_back();
  }
  c.tokens = tokens;
  c.valid = std::min(c.valid, tokens);
  return Status::OK();
}

std::vector<void*> RegisteredKvPool::Blocks(const std::string& context) const {
  std::vector<void*> out;
  auto it = ctxs_.find(context);
  if (it == ctxs_.end()) return out;
  for (uint32_t s : it->second.slots) out.push_back(slots_[s].address);
  return out;
}

int64_t RegisteredKvPool::tokens(const std::string& context) const {
  auto it = ctxs_.find(context);
  return it == ctxs_.end() ? -1 : it->second.tokens;
}

Status RegisteredKvPool::SetValid(const std::string& context, int64_t valid_tokens) {
  auto it = ctxs_.find(context);
  if (it == ctxs_.end())
    return Status::NotFound("KV pool '" + options_.name + "' does not hold " + context);
  it->second.valid = std::clamp<int64_t>(valid_tokens, 0, it->second.tokens);
  return Status::OK();
}

int64_t RegisteredKvPool::valid_tokens(const std::string& context) const {
  auto it = ctxs_.find(context);
  return it == ctxs_.end() ? -1 : it->second.valid;
}

void RegisteredKvPool::SetBusy(const std::string& context, bool busy) {
  auto it = ctxs_.find(context);
  if (it != ctxs_.end()) it->second.busy = busy;
}

Status RegisteredKvPool::Stage(const Ctx& c) const {
  for (uint32_t s : c.slots) {
    if (slots_[s].device < 0) continue;
    std::vector<char>& buf = staging_[s];
    buf.resize(options_.block_bytes);
    SY_RETURN_IF_ERROR(internal::CopyFromCuda(buf.data(), slots_[s].address, options_.block_bytes,
                                              slots_[s].device));
  }
  return Status::OK();
}

Status RegisteredKvPool::Unstage(const Ctx& c) const {
  for (uint32_t s : c.slots) {
    if (slots_[s].device < 0) continue;
    auto it = staging_.find(s);
    if (it == staging_.end()) continue;
    SY_RETURN_IF_ERROR(internal::CopyToCuda(slots_[s].address, it->second.data(),
                                            options_.block_bytes, slots_[s].device));
    staging_.erase(it);
  }
  return Status::OK();
}

Result<ContextKvView> RegisteredKvPool::ExportKv(const std::string& context) const {
  auto it = ctxs_.find(context);
  if (it == ctxs_.end())
    return Status::NotFound("KV pool '" + options_.name + "' does not hold " + context);
  const Ctx& c = it->second;
  if (c.busy)
    return Status::FailedPrecondition("KV pool '" + options_.name + "': a step writes into " +
                                      context);
  if (!host_only_) SY_RETURN_IF_ERROR(Stage(c));
  ContextKvView v;
  v.tokens = c.tokens;
  v.valid_tokens = c.valid;
  for (uint32_t s : c.slots)
    v.blocks.push_back(slots_[s].device < 0 ? slots_[s].address : staging_[s].data());
  return v;
}

Result<std::vector<void*>> RegisteredKvPool::ImportTargets(const std::string& context) {
  auto it = ctxs_.find(context);
  if (it == ctxs_.end())
    return Status::NotFound("KV pool '" + options_.name + "' reserved no blocks for " + context);
  Ctx& c = it->second;
  c.valid = 0;  // nothing readable until the move commits
  std::vector<void*> out;
  for (uint32_t s : c.slots) {
    if (slots_[s].device < 0) {
      out.push_back(slots_[s].address);
    } else {
      std::vector<char>& buf = staging_[s];
      buf.resize(options_.block_bytes);
      out.push_back(buf.data());
    }
  }
  return out;
}

Status RegisteredKvPool::CommitImport(const std::string& context, int64_t valid_tokens) {
  auto it = ctxs_.find(context);
  if (it == ctxs_.end())
    return Status::NotFound("KV pool '" + options_.name + "' reserved no blocks for " + context);
  Ctx& c = it->second;
  if (!host_only_) SY_RETURN_IF_ERROR(Unstage(c));
  c.valid = std::clamp<int64_t>(valid_tokens, 0, c.tokens);
  return Status::OK();
}

}  // namespace switchyard::executors
