// mooncake → Switchyard trace: conversation trees rebuilt from hash_ids (rules in
// convert.h).
#include <algorithm>
#include <map>
#include <unordered_map>

#include "base/ids.h"
#include "proto/json.h"
#include "proto/switchyard/v1/trace_sources.pb.h"
#include "replay/convert.h"
#include "replay/convert_internal.h"

namespace switchyard::replay {
namespace {

constexpr int64_t kBlockTokens = 512;  // Mooncake's hash block size

struct VecHash {
  size_t operator()(const std::vector<int64_t>& v) const {
    uint64_t h = 1469598103934665603ULL;
    for (int64_t x : v) h = (h ^ static_cast<uint64_t>(x)) * 1099511628211ULL;
    return h;
  }
};

// Nominal unloaded service time of one request, for oracle-span deadlines only: 1 s per 10K prompt
// tokens + 20 ms per output token (a rough single-GPU Llama-3.1-8B rate; documented).
double NominalServiceS(const v1::MooncakeRecord& r) {
  return r.input_length() / 10000.0 + r.output_length() * 0.020;
}

// parent[i] = index of the request that request i continues, or -1 for a root.
std::vector<int> FindParents(const std::vector<v1::MooncakeRecord>& rs) {
  std::unordered_map<std::vector<int64_t>, int, VecHash> full_blocks;  // → latest request
  std::vector<int> parent(rs.size(), -1);
  for (size_t i = 0; i < rs.size(); ++i) {
    const auto& h = rs[i].hash_ids();
    std::vector<int64_t> prefix(h.begin(), h.end());
    // Longest prefix (at least 2 blocks) that is all of an earlier request's full blocks.
    for (size_t k = prefix.size(); k >= 2; --k) {
      prefix.resize(k);
      auto it = full_blocks.find(prefix);
      if (it != full_blocks.end() && rs[it->second].input_length() < rs[i].input_length()) {
        parent[i] = it->second;
        break;
      }
    }
    size_t full = static_cast<size_t>(rs[i].input_length() / kBlockTokens);
    full = std::min<size_t>(full, static_cast<size_t>(h.size()));
    if (full >= 2) full_blocks[std::vector<int64_t>(h.begin(), h.begin() + full)] = (int)i;
  }
  return parent;
}

int RootOf(const std::vector<int>& parent, int i) {
  while (parent[i] >= 0) i = parent[i];
  return i;
}

// Leading blocks of `r` that also occur in another conversation: a shared prefix.
int SharedLeadingBlocks(const v1::MooncakeRecord& r, int conv,
                        const std::unordered_map<int64_t, int>& block_conv) {
  int n = 0;
  for (int64_t b : r.hash_ids()) {
    auto it = block_conv.find(b);
    if (it == block_conv.end() || it->second != -1) break;  // -1: seen in several
    ++n;
  }
  (void)conv;
  return n;
}

void AddTurn(v1::TraceRecord* rec, const std::vector<v1::MooncakeRecord>& rs,
             const std::vector<int>& parent, std::map<int, int>* children_seen, int i, int root,
             int shared_blocks, const ConvertOptions& o) {
  const auto& r = rs[i];
  v1::Workflow* wf = rec->mutable_workflow();
  v1::ProgramNode* n = wf->add_nodes();
  n->set_id("turn-" + std::to_string(i));
  n->set_kind(v1::LLM);
  n->set_role("chat");
  n->set_model_id(o.model_id);
  n->mutable_hints()->set_prompt_tokens(r.input_length());
  n->mutable_hints()->set_max_output_tokens(std::max<int64_t>(1, r.output_length()));
  auto* ref = n->add_cache_refs();
  auto* actual = rec->add_actuals();
  actual->set_node_id(n->id());
  actual->set_output_tokens(r.output_length());
  int p = parent[i];
  if (p < 0) {
    ref->set_context("conv-" + std::to_string(i));
    ref->set_mode(v1::CacheRef::CREATE);
    n->mutable_hints()->set_extend_tokens(r.input_length());
    if (shared_blocks > 0) {
      ref->set_shared_prefix("mooncake-prefix-" + HexId(r.hash_ids(shared_blocks - 1)));
      ref->set_shared_prefix_tokens(std::min(r.input_length(), shared_blocks * kBlockTokens));
    }
    return;
  }
  // The first child continues the parent's context; later ones branch into a new one.
  int nth = (*children_seen)[p]++;
  std::string parent_ctx = wf->nodes(0).cache_refs(0).context();
  for (const auto& node : wf->nodes()) {
    if (node.id() == "turn-" + std::to_string(p)) parent_ctx = node.cache_refs(0).context();
  }
  if (nth == 0) {
    ref->set_context(parent_ctx);
    ref->set_mode(v1::CacheRef::EXTEND);
  } else {
    ref->set_context("conv-" + std::to_string(i));
    ref->set_mode(v1::CacheRef::CREATE);
    ref->set_shared_prefix("mooncake-turn-" + std::to_string(p));
    ref->set_shared_prefix_tokens(rs[p].input_length());
  }
  n->mutable_hints()->set_extend_tokens(r.input_length() - rs[p].input_length());
  std::string user = "user-" + std::to_string(i);
  n->add_deps(user);
  actual->set_revealed_after(user);
  v1::ProgramNode* t = wf->add_nodes();
  t->set_id(user);
  t->set_kind(v1::TOOL);
  t->set_tool_name("user_turn");
  t->add_deps("turn-" + std::to_string(p));
  auto* ta = rec->add_actuals();
  ta->set_node_id(user);
  ta->set_duration_ms(std::max<int64_t>(0, r.timestamp() - rs[p].timestamp()));
  ta->set_revealed_after("turn-" + std::to_string(p));
  (void)root;
}

}  // namespace

Result<std::vector<v1::TraceRecord>> ConvertMooncake(const std::string& jsonl,
                                                     const ConvertOptions& o) {
  std::vector<v1::MooncakeRecord> rs;
  Status st = ForEachLine(jsonl, [&](size_t line_no, std::string_view line) -> Status {
    v1::MooncakeRecord r;
    std::string where = "mooncake line " + std::to_string(line_no);
    proto::JsonParseOptions opts;
    opts.source = where;
    SY_RETURN_IF_ERROR(proto::ParseJson(line, &r, opts));
    if (r.input_length() <= 0) return Status::InvalidArgument(where + ": input_length <= 0");
    if (r.output_length() < 0) return Status::InvalidArgument(where + ": output_length < 0");
    if (!rs.empty() && r.timestamp() < rs.back().timestamp()) {
      return Status::InvalidArgument(where + ": timestamp goes backwards");
    }
    rs.push_back(std::move(r));
    return Status::OK();
  });
  if (!st.ok()) return st;
  if (rs.empty()) return Status::InvalidArgument("mooncake input has no requests");

  std::vector<int> parent = FindParents(rs);
  std::unordered_map<int64_t, int> block_conv;  // block → conversation root, -1 if several
  for (size_t i = 0; i < rs.size(); ++i) {
    int root = RootOf(parent, static_cast<int>(i));
    for (int64_t b : rs[i].hash_ids()) {
      auto [it, inserted] = block_conv.emplace(b, root);
      if (!inserted && it->second != root) it->second = -1;
    }
  }
  std::map<int, v1::TraceRecord> convs;  // root → record (ordered by root = by arrival)
  std::map<int, int> children_seen;
  std::map<int, double> span_s;
  for (size_t i = 0; i < rs.size(); ++i) {
    int root = RootOf(parent, static_cast<int>(i));
    v1::TraceRecord& rec = convs[root];
    if (rec.workflow().id().empty()) {
      if (o.limit > 0 && static_cast<int64_t>(convs.size()) > o.limit) {
        convs.erase(root);
        continue;
      }
      rec.set_source("mooncake:" + std::to_string(i));
      rec.set_arrival_ms(rs[i].timestamp());
      rec.mutable_workflow()->set_id("mc-" + std::to_string(i));
      rec.mutable_workflow()->set_tenant(TenantFor(convs.size() - 1, o));
      rec.mutable_workflow()->set_arrival_ms(rs[i].timestamp());
    }
    int shared = parent[i] < 0 ? SharedLeadingBlocks(rs[i], root, block_conv) : 0;
    AddTurn(&rec, rs, parent, &children_seen, static_cast<int>(i), root, shared, o);
    double end = (rs[i].timestamp() - rs[root].timestamp()) / 1000.0 + NominalServiceS(rs[i]);
    span_s[root] = std::max(span_s[root], end);
  }
  std::vector<v1::TraceRecord> out;
  out.reserve(convs.size());
  for (auto& [root, rec] : convs) {
    ApplyScales(o, &rec);
    SY_RETURN_IF_ERROR(ApplyDeadline(span_s[root], o, &rec));  // span: kOracleSpan only
    out.push_back(std::move(rec));
  }
  SortByArrival(&out);
  return out;
}

}  // namespace switchyard::replay
