// Property tests over random DAGs with a fixed seed set (300 seeds, 1..60 nodes).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <sstream>

#include "program_graph/workflow.h"
#include "tests/program_graph/test_util.h"

namespace switchyard::program_graph {
namespace {

constexpr int kSeeds = 300;

// A random DAG: node k may depend only on nodes before it in a hidden order; the nodes
// are listed shuffled so that insertion order is not a topological order.
struct RandomDag {
  std::vector<v1::ProgramNode> nodes;   // in hidden topological order
  std::vector<v1::ProgramNode> listed;  // shuffled
};

RandomDag MakeDag(std::mt19937_64& rng, int n) {
  RandomDag dag;
  double p = std::uniform_real_distribution<double>(0.0, 0.4)(rng);
  for (int k = 0; k < n; ++k) {
    v1::ProgramNode node =
        testing::MakeNode("n" + std::to_string(k), rng() % 2 ? v1::LLM : v1::TOOL);
    for (int d = 0; d < k; ++d) {
      if (std::bernoulli_distribution(p)(rng)) node.add_deps("n" + std::to_string(d));
    }
    node.mutable_hints()->set_expected_duration_ms(rng() % 1000);
    node.mutable_hints()->set_max_output_tokens(rng() % 50);
    dag.nodes.push_back(node);
  }
  dag.listed = dag.nodes;
  std::shuffle(dag.listed.begin(), dag.listed.end(), rng);
  return dag;
}

// Checks structural invariants of an accepted graph; used by the fuzz test too.
void ExpectStructure(const Workflow& wf) {
  std::vector<size_t> pos(wf.size());
  const auto& topo = wf.TopologicalOrder();
  ASSERT_EQ(topo.size(), wf.size());
  for (size_t p = 0; p < topo.size(); ++p) pos[topo[p]] = p;
  for (NodeIndex i = 0; i < wf.size(); ++i) {
    ASSERT_EQ(wf.Find(wf.node_id(i)), i);
    for (NodeIndex d : wf.deps(i)) {
      EXPECT_LT(pos[d], pos[i]);
      const auto& ch = wf.children(d);
      EXPECT_NE(std::find(ch.begin(), ch.end(), i), ch.end());
    }
    bool all_deps_done = true;
    for (NodeIndex d : wf.deps(i)) all_deps_done &= wf.state(d) == v1::NODE_SUCCEEDED;
    v1::NodeState s = wf.state(i);
    if (s == v1::NODE_PENDING || s == v1::NODE_READY) {
      EXPECT_EQ(s == v1::NODE_READY, all_deps_done) << wf.node_id(i);
    }
  }
}

bool DependsOn(const Workflow& wf, const std::string& a, const std::string& b) {
  for (NodeIndex d : wf.deps(*wf.Find(a))) {
    if (wf.node_id(d) == b) return true;
  }
  return false;
}

TEST(PropertyTest, RandomDagsAreAccepted) {
  for (int seed = 0; seed < kSeeds; ++seed) {
    std::mt19937_64 rng(seed);
    RandomDag dag = MakeDag(rng, 1 + seed % 60);
    auto r = Workflow::Create(testing::MakeWorkflow(dag.listed), Time{});
    ASSERT_TRUE(r.ok()) << "seed " << seed << ": " << r.status();
    ASSERT_EQ((*r)->size(), dag.nodes.size());
    ExpectStructure(**r);
  }
}

// v depends transitively on u (u is an ancestor of v) in the hidden order.
bool Reaches(const std::vector<v1::ProgramNode>& nodes, int u, int v) {
  std::vector<char> anc(nodes.size(), 0);
  anc[u] = 1;
  for (int k = u + 1; k <= v; ++k) {
    for (const std::string& d : nodes[k].deps()) anc[k] |= anc[std::stoi(d.substr(1))];
  }
  return anc[v];
}

// Verifies "cycle: a -> b -> ... -> a" names a real cycle of `nodes`.
void ExpectRealCycle(const std::string& msg, const std::vector<v1::ProgramNode>& nodes) {
  ASSERT_EQ(msg.rfind("cycle: ", 0), 0u) << msg;
  std::vector<std::string> ids;
  std::stringstream ss(msg.substr(7));
  std::string tok;
  while (ss >> tok) {
    if (tok != "->") ids.push_back(tok);
  }
  ASSERT_GE(ids.size(), 3u) << msg;  // at least "a -> b -> a"
  EXPECT_EQ(ids.front(), ids.back());
  for (size_t k = 0; k + 1 < ids.size(); ++k) {
    const auto& n = nodes[std::stoi(ids[k].substr(1))];
    EXPECT_NE(std::find(n.deps().begin(), n.deps().end(), ids[k + 1]), n.deps().end()) << msg;
  }
}

TEST(PropertyTest, AnyBackEdgeIsRejectedAndAppendLeavesGraphUnchanged) {
  int appends_checked = 0;
  for (int seed = 0; seed < kSeeds; ++seed) {
    std::mt19937_64 rng(1000 + seed);
    int n = 2 + seed % 59;
    RandomDag dag = MakeDag(rng, n);
    // Pick u < v with u an ancestor of v (or force a direct edge), then add v to u's deps.
    int u = rng() % (n - 1);
    int v = u + 1 + rng() % (n - 1 - u);
    auto nodes = dag.nodes;
    if (!Reaches(nodes, u, v)) nodes[v].add_deps("n" + std::to_string(u));
    nodes[u].add_deps("n" + std::to_string(v));
    std::string err = testing::CreateError(testing::MakeWorkflow(nodes));
    ExpectRealCycle(err, nodes);

    // The same cycle inside an append: create the nodes before u, append the rest.
    std::vector<v1::ProgramNode> first(nodes.begin(), nodes.begin() + u);
    std::vector<v1::ProgramNode> rest(nodes.begin() + u, nodes.end());
    std::shuffle(rest.begin(), rest.end(), rng);
    auto wf = testing::MustCreate(first);
    ASSERT_NE(wf, nullptr);
    std::string before = wf->ToProto().SerializeAsString();
    auto ready_before = wf->ReadyNodes();
    Status s = wf->Append(rest, Time{});
    ExpectRealCycle(s.message(), nodes);
    EXPECT_EQ(wf->ToProto().SerializeAsString(), before);
    EXPECT_EQ(wf->ReadyNodes(), ready_before);
    EXPECT_EQ(wf->size(), static_cast<size_t>(u));
    ++appends_checked;
  }
  EXPECT_EQ(appends_checked, kSeeds);
}

Duration BruteLongestFrom(const Workflow& wf, NodeIndex i) {
  Duration best = Duration::zero();
  for (NodeIndex c : wf.children(i)) best = std::max(best, BruteLongestFrom(wf, c));
  return wf.Work(i) + best;
}

TEST(PropertyTest, CriticalPathEqualsBruteForceOnSmallGraphs) {
  for (int seed = 0; seed < kSeeds; ++seed) {
    std::mt19937_64 rng(5000 + seed);
    RandomDag dag = MakeDag(rng, 1 + seed % 12);
    auto wf = testing::MustCreate(dag.listed);
    ASSERT_NE(wf, nullptr);
    // Enumerate every path (each recursion follows one path), independent of the sweep.
    Duration overall = Duration::zero();
    for (NodeIndex i = 0; i < wf->size(); ++i) {
      Duration brute = BruteLongestFrom(*wf, i);
      EXPECT_EQ(wf->RemainingCriticalWork(i), brute) << "seed " << seed << " node " << i;
      overall = std::max(overall, brute);
    }
    EXPECT_EQ(wf->CriticalPathLength(), overall);
    auto path = wf->CriticalPath();
    Duration sum = Duration::zero();
    for (size_t k = 0; k < path.size(); ++k) {
      sum += wf->Work(path[k]);
      if (k > 0) {
        EXPECT_TRUE(DependsOn(*wf, wf->node_id(path[k]), wf->node_id(path[k - 1])));
      }
    }
    EXPECT_EQ(sum, overall) << "seed " << seed;
    ASSERT_FALSE(path.empty());
    EXPECT_TRUE(wf->children(path.back()).empty());
  }
}

// Longest chain of non-terminal nodes ending at i, by enumerating every backward path.
uint32_t BruteSteps(const Workflow& wf, NodeIndex i) {
  uint32_t best = 0;
  for (NodeIndex d : wf.deps(i)) {
    v1::NodeState s = wf.state(d);
    if (s == v1::NODE_SUCCEEDED || s == v1::NODE_CANCELLED || s == v1::NODE_FAILED) continue;
    best = std::max(best, BruteSteps(wf, d) + 1);
  }
  return best;
}

TEST(PropertyTest, StepsToExecutionEqualsBruteForceOnSmallGraphs) {
  for (int seed = 0; seed < kSeeds; ++seed) {
    std::mt19937_64 rng(7000 + seed);
    RandomDag dag = MakeDag(rng, 1 + seed % 12);
    auto wf = testing::MustCreate(dag.listed);
    ASSERT_NE(wf, nullptr);
    for (int round = 0; round < 4; ++round) {
      for (NodeIndex i = 0; i < wf->size(); ++i) {
        v1::NodeState s = wf->state(i);
        uint32_t want = s == v1::NODE_SUCCEEDED || s == v1::NODE_CANCELLED ? kNeverRuns
                        : s == v1::NODE_READY || s == v1::NODE_RUNNING     ? 0
                                                                           : BruteSteps(*wf, i);
        EXPECT_EQ(wf->StepsToExecution(i), want) << "seed " << seed << " node " << i;
      }
      auto ready = wf->ReadyNodes();
      if (ready.empty()) break;
      for (size_t k = 0; k < ready.size(); k += 2) {
        ASSERT_TRUE(wf->MarkRunning(ready[k]).ok());
        if (rng() % 2) {
          ASSERT_TRUE(wf->MarkSucceeded(ready[k]).ok());
        }
      }
    }
  }
}

TEST(PropertyTest, ReadinessOrderIsTopologicalAndComplete) {
  for (int seed = 0; seed < kSeeds; ++seed) {
    std::mt19937_64 rng(9000 + seed);
    RandomDag dag = MakeDag(rng, 1 + seed % 60);
    auto wf = testing::MustCreate(dag.listed);
    ASSERT_NE(wf, nullptr);
    std::vector<NodeIndex> order;
    std::vector<size_t> pos(wf->size(), SIZE_MAX);
    for (auto ready = wf->ReadyNodes(); !ready.empty(); ready = wf->ReadyNodes()) {
      NodeIndex pick = ready[rng() % ready.size()];
      ASSERT_TRUE(wf->MarkRunning(pick).ok());
      std::set<NodeIndex> before(ready.begin(), ready.end());
      before.erase(pick);
      auto newly = wf->MarkSucceeded(pick);
      ASSERT_TRUE(newly.ok());
      pos[pick] = order.size();
      order.push_back(pick);
      // Newly ready = the ready set now minus the ready set before.
      std::set<NodeIndex> after;
      for (NodeIndex r : wf->ReadyNodes()) {
        if (!before.count(r)) after.insert(r);
      }
      EXPECT_EQ(after, std::set<NodeIndex>(newly->begin(), newly->end()));
      ExpectStructure(*wf);
    }
    ASSERT_EQ(order.size(), wf->size()) << "seed " << seed;
    for (NodeIndex i = 0; i < wf->size(); ++i) {
      for (NodeIndex d : wf->deps(i)) EXPECT_LT(pos[d], pos[i]);
    }
    wf->Close();
    EXPECT_EQ(wf->state(), v1::WORKFLOW_COMPLETED);
  }
}

// Growth in random chunks interleaved with execution and failures keeps readiness equal to
// a naive recomputation, and failed nodes cancel exactly their non-terminal descendants.
TEST(PropertyTest, IncrementalGrowthWithFailuresMatchesNaive) {
  for (int seed = 0; seed < kSeeds; ++seed) {
    std::mt19937_64 rng(20000 + seed);
    RandomDag dag = MakeDag(rng, 1 + seed % 60);
    auto wf = testing::MustCreate({});
    size_t next = 0;
    while (next < dag.nodes.size() && wf->state() == v1::WORKFLOW_RUNNING) {
      size_t chunk = 1 + rng() % 8;
      std::vector<v1::ProgramNode> batch(
          dag.nodes.begin() + next, dag.nodes.begin() + std::min(dag.nodes.size(), next + chunk));
      std::shuffle(batch.begin(), batch.end(), rng);
      ASSERT_TRUE(wf->Append(batch, Time{}).ok()) << "seed " << seed;
      next += batch.size();
      for (int step = 0; step < 3; ++step) {
        auto ready = wf->ReadyNodes();
        if (ready.empty()) break;
        NodeIndex pick = ready[rng() % ready.size()];
        ASSERT_TRUE(wf->MarkRunning(pick).ok());
        if (rng() % 25 == 0) {
          ASSERT_TRUE(wf->MarkFailed(pick, "boom", FailMode::kTerminal).ok());
        } else {
          ASSERT_TRUE(wf->MarkSucceeded(pick).ok());
        }
      }
      ExpectStructure(*wf);
    }
    for (NodeIndex i = 0; i < wf->size(); ++i) {
      if (wf->state(i) != v1::NODE_CANCELLED) continue;
      bool dep_bad = false;
      for (NodeIndex d : wf->deps(i)) {
        dep_bad |= wf->state(d) == v1::NODE_FAILED || wf->state(d) == v1::NODE_CANCELLED;
      }
      EXPECT_TRUE(dep_bad) << "seed " << seed << " node " << i;
    }
  }
}

}  // namespace
}  // namespace switchyard::program_graph
