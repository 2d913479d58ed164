// Workflow construction and atomic growth: an append is staged (validated against the
// committed graph without touching it) and committed only when every rule holds.
#include "program_graph/workflow.h"

#include <algorithm>

namespace switchyard::program_graph {

struct Workflow::Staged {
  const std::vector<v1::ProgramNode>* nodes = nullptr;
  NodeIndex base = 0;  // index of the first new node
  IdMap new_ids;
  std::vector<std::vector<NodeIndex>> deps;  // per new node, global indices
  std::vector<NodeIndex> topo;               // new nodes, deps first
  std::unordered_map<std::string, NodeIndex> new_creators;

  bool IsNew(NodeIndex i) const { return i >= base; }
  const v1::ProgramNode& node(NodeIndex i) const { return (*nodes)[i - base]; }
};

namespace {

std::string Who(const v1::ProgramNode& n) { return "node '" + n.id() + "'"; }

bool References(const v1::ProgramNode& n, std::string_view context) {
  for (const v1::CacheRef& ref : n.cache_refs()) {
    if (ref.context() == context) return true;
  }
  return false;
}

std::string_view ModeName(v1::CacheRef::Mode m) {
  return m == v1::CacheRef::READ ? "READ" : m == v1::CacheRef::EXTEND ? "EXTEND" : "CREATE";
}

}  // namespace

Workflow::Workflow(const v1::Workflow& proto, Limits limits)
    : limits_(limits), estimator_(DefaultWorkEstimate) {
  header_ = proto;
  header_.clear_nodes();
}

Result<std::unique_ptr<Workflow>> Workflow::Create(const v1::Workflow& proto, Time now,
                                                   Limits limits) {
  SY_RETURN_IF_ERROR(ValidateWorkflowHeader(proto, now));
  std::unique_ptr<Workflow> wf(new Workflow(proto, limits));
  std::vector<v1::ProgramNode> nodes(proto.nodes().begin(), proto.nodes().end());
  SY_RETURN_IF_ERROR(wf->Append(nodes, now));
  return wf;
}

Status Workflow::Append(const std::vector<v1::ProgramNode>& nodes, Time now) {
  if (closed_ || failed_ || cancelled_) {
    return Status::FailedPrecondition("workflow '" + id() + "': cannot append to a " +
                                      (closed_   ? "closed"
                                       : failed_ ? "failed"
                                                 : "cancelled") +
                                      " workflow");
  }
  Staged st;
  SY_RETURN_IF_ERROR(Stage(nodes, now, &st));
  Commit(std::move(st));
  return Status::OK();
}

Status Workflow::Stage(const std::vector<v1::ProgramNode>& nodes, Time now, Staged* st) const {
  if (size() + nodes.size() > limits_.max_nodes) {
    return Status::InvalidArgument("workflow '" + id() +
                                   "': nodes: " + std::to_string(size() + nodes.size()) +
                                   " nodes exceed the limit " + std::to_string(limits_.max_nodes));
  }
  st->nodes = &nodes;
  st->base = static_cast<NodeIndex>(size());
  for (size_t k = 0; k < nodes.size(); ++k) {
    const v1::ProgramNode& n = nodes[k];
    SY_RETURN_IF_ERROR(ValidateNodeFields(n, size() + k, header_, limits_, now));
    if (index_.count(n.id()) > 0 ||
        !st->new_ids.emplace(n.id(), static_cast<NodeIndex>(size() + k)).second) {
      return Status::InvalidArgument(Who(n) + ": id: duplicate node id");
    }
  }
  SY_RETURN_IF_ERROR(StageDeps(st));
  return StageContexts(st);
}

// Resolves deps, then orders the new nodes (Kahn); leftovers lie on or behind a cycle.
Status Workflow::StageDeps(Staged* st) const {
  const auto& nodes = *st->nodes;
  st->deps.resize(nodes.size());
  std::vector<uint32_t> new_indeg(nodes.size(), 0);
  std::vector<std::vector<NodeIndex>> new_children(nodes.size());
  for (size_t k = 0; k < nodes.size(); ++k) {
    const v1::ProgramNode& n = nodes[k];
    for (const std::string& d : n.deps()) {
      if (d == n.id()) return Status::InvalidArgument(Who(n) + ": deps: depends on itself");
      NodeIndex di;
      if (auto it = st->new_ids.find(d); it != st->new_ids.end()) {
        di = it->second;
        ++new_indeg[k];
        new_children[di - st->base].push_back(static_cast<NodeIndex>(st->base + k));
      } else if (auto jt = index_.find(d); jt != index_.end()) {
        di = jt->second;
      } else {
        return Status::InvalidArgument(Who(n) + ": deps: unknown dependency '" + d + "'");
      }
      if (std::find(st->deps[k].begin(), st->deps[k].end(), di) != st->deps[k].end()) {
        return Status::InvalidArgument(Who(n) + ": deps: duplicate dependency '" + d + "'");
      }
      st->deps[k].push_back(di);
    }
  }
  std::vector<NodeIndex> queue;
  for (size_t k = 0; k < nodes.size(); ++k) {
    if (new_indeg[k] == 0) queue.push_back(static_cast<NodeIndex>(st->base + k));
  }
  for (size_t h = 0; h < queue.size(); ++h) {
    for (NodeIndex c : new_children[queue[h] - st->base]) {
      if (--new_indeg[c - st->base] == 0) queue.push_back(c);
    }
  }
  if (queue.size() == nodes.size()) {
    st->topo = std::move(queue);
    return Status::OK();
  }
  // Every leftover node has a leftover dep: follow deps from the lowest leftover index
  // until a node repeats; the repeated stretch is the cycle.
  size_t start = 0;
  while (new_indeg[start] == 0) ++start;
  std::vector<size_t> pos(nodes.size(), SIZE_MAX);
  std::vector<NodeIndex> walk;
  NodeIndex cur = static_cast<NodeIndex>(st->base + start);
  while (pos[cur - st->base] == SIZE_MAX) {
    pos[cur - st->base] = walk.size();
    walk.push_back(cur);
    for (NodeIndex d : st->deps[cur - st->base]) {
      if (st->IsNew(d) && new_indeg[d - st->base] > 0) {
        cur = d;
        break;
      }
    }
  }
  std::vector<NodeIndex> cycle(walk.begin() + pos[cur - st->base], walk.end());
  std::rotate(cycle.begin(), std::min_element(cycle.begin(), cycle.end()), cycle.end());
  std::vector<std::string> ids;
  for (NodeIndex i : cycle) ids.push_back(st->node(i).id());
  return Status::InvalidArgument(CycleText(ids));
}

// Checks context creation and use in topological order, so every ancestor of a node is
// already checked when the node is.
Status Workflow::StageContexts(Staged* st) const {
  for (NodeIndex i : st->topo) {
    const v1::ProgramNode& n = st->node(i);
    for (const v1::CacheRef& ref : n.cache_refs()) {
      const std::string& c = ref.context();
      std::optional<NodeIndex> creator;
      if (auto it = contexts_.find(c); it != contexts_.end()) creator = it->second.front();
      if (auto it = st->new_creators.find(c); it != st->new_creators.end()) creator = it->second;
      if (ref.mode() == v1::CacheRef::CREATE) {
        if (creator) {
          const std::string& other =
              *creator < st->base ? node_id(*creator) : st->node(*creator).id();
          return Status::InvalidArgument(Who(n) + ": cache_refs: context '" + c +
                                         "' is already created by node '" + other + "'");
        }
        st->new_creators.emplace(c, i);
        continue;
      }
      if (!creator || !HasAncestorUsing(*st, i, c)) {
        return Status::InvalidArgument(Who(n) +
                                       ": cache_refs: " + std::string(ModeName(ref.mode())) +
                                       " of context '" + c + "' that no ancestor creates");
      }
    }
  }
  return Status::OK();
}

// Depth-first search over the ancestors of `reader`, stopping at the first one that
// references `context`: a checked node referencing it is its creator or descends from it.
bool Workflow::HasAncestorUsing(const Staged& st, NodeIndex reader,
                                std::string_view context) const {
  size_t total = st.base + st.nodes->size();
  if (visit_stamp_.size() < total) visit_stamp_.resize(total, 0);
  if (++stamp_ == 0) {
    std::fill(visit_stamp_.begin(), visit_stamp_.end(), 0);
    stamp_ = 1;
  }
  std::vector<NodeIndex> stack = {reader};
  while (!stack.empty()) {
    NodeIndex v = stack.back();
    stack.pop_back();
    const auto& vdeps = st.IsNew(v) ? st.deps[v - st.base] : deps_[v];
    for (NodeIndex d : vdeps) {
      if (visit_stamp_[d] == stamp_) continue;
      visit_stamp_[d] = stamp_;
      if (References(st.IsNew(d) ? st.node(d) : nodes_[d], context)) return true;
      stack.push_back(d);
    }
  }
  return false;
}

void Workflow::Commit(Staged st) {
  const auto& nodes = *st.nodes;
  for (size_t k = 0; k < nodes.size(); ++k) {
    NodeIndex i = static_cast<NodeIndex>(st.base + k);
    nodes_.push_back(nodes[k]);
    index_.emplace(nodes[k].id(), i);
    uint32_t unmet = 0;
    for (NodeIndex d : st.deps[k]) {
      if (d < st.base) children_[d].push_back(i);
      if (d >= st.base || state_[d] != v1::NODE_SUCCEEDED) ++unmet;
    }
    deps_.push_back(std::move(st.deps[k]));
    children_.emplace_back();
    retry_block_.push_back(RetryBlockReason(nodes[k]));
    unmet_deps_.push_back(unmet);
    attempts_.push_back(1);
    terminal_failure_.push_back(0);
    reason_.emplace_back();
    state_.push_back(v1::NODE_PENDING);
    ready_pos_.push_back(UINT32_MAX);
    if (unmet == 0) SetState(i, v1::NODE_READY);
  }
  for (size_t k = 0; k < nodes.size(); ++k) {
    NodeIndex i = static_cast<NodeIndex>(st.base + k);
    for (NodeIndex d : deps_[i]) {
      if (d >= st.base) children_[d].push_back(i);
    }
    for (const v1::CacheRef& ref : nodes[k].cache_refs()) {
      auto& users = contexts_[ref.context()];
      if (ref.mode() == v1::CacheRef::CREATE) {
        users.insert(users.begin(), i);
      } else {
        users.push_back(i);
      }
    }
  }
  topo_.insert(topo_.end(), st.topo.begin(), st.topo.end());
  critical_valid_ = false;
  steps_valid_ = false;
}

std::optional<Time> Workflow::deadline() const {
  if (header_.deadline_ms() == 0) return std::nullopt;
  return Time::FromMillis(header_.deadline_ms());
}

std::optional<Time> Workflow::EffectiveDeadline(NodeIndex i) const {
  if (nodes_[i].deadline_ms() != 0) return Time::FromMillis(nodes_[i].deadline_ms());
  return deadline();
}

std::optional<NodeIndex> Workflow::Find(std::string_view node_id) const {
  auto it = index_.find(node_id);
  if (it == index_.end()) return std::nullopt;
  return it->second;
}

v1::Workflow Workflow::ToProto() const {
  v1::Workflow out = header_;
  for (const v1::ProgramNode& n : nodes_) *out.add_nodes() = n;
  return out;
}

}  // namespace switchyard::program_graph
