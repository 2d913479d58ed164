// The order in which a batch of nodes is fed to the scheduler (DepsFirst, service/service.h).
#include <gtest/gtest.h>

#include <string>
#include <unordered_map>
#include <vector>

#include "service/service.h"

namespace switchyard::service {
namespace {

using Nodes = google::protobuf::RepeatedPtrField<v1::ProgramNode>;

// Adds node `id` depending on `deps`.
void Add(Nodes* nodes, const std::string& id, std::vector<std::string> deps = {}) {
  v1::ProgramNode* n = nodes->Add();
  n->set_id(id);
  n->set_kind(v1::TOOL);
  for (auto& d : deps) n->add_deps(d);
}

std::vector<std::string> Ids(const std::vector<const v1::ProgramNode*>& order) {
  std::vector<std::string> ids;
  for (const v1::ProgramNode* n : order) ids.push_back(n->id());
  return ids;
}

// Every node once, each after its deps inside the batch.
void ExpectDepsFirst(const Nodes& nodes, const std::vector<const v1::ProgramNode*>& order) {
  ASSERT_EQ(order.size(), static_cast<size_t>(nodes.size()));
  std::unordered_map<std::string, size_t> at;
  for (size_t i = 0; i < order.size(); ++i)
    ASSERT_TRUE(at.emplace(order[i]->id(), i).second) << order[i]->id() << " twice";
  for (const v1::ProgramNode& n : nodes) {
    for (const std::string& d : n.deps()) {
      if (at.count(d)) {
        EXPECT_LT(at[d], at[n.id()]) << d << " before " << n.id();
      }
    }
  }
}

TEST(DepsFirstTest, ABatchInDependencyOrderKeepsItsOrder) {
  Nodes nodes;
  Add(&nodes, "a");
  Add(&nodes, "b", {"a"});
  Add(&nodes, "c");
  Add(&nodes, "d", {"b", "c", "outside"});  // a dep outside the batch is ignored
  EXPECT_EQ(Ids(DepsFirst(nodes)), (std::vector<std::string>{"a", "b", "c", "d"}));
}

// The order of repeated passes in batch order: a node whose dep comes after it waits for
// the next pass; one whose dep was taken earlier in the same pass goes in that pass.
TEST(DepsFirstTest, NodesBeforeTheirDepsWaitForTheNextPass) {
  Nodes nodes;
  Add(&nodes, "x", {"z"});
  Add(&nodes, "y");
  Add(&nodes, "z", {"y"});
  Add(&nodes, "w");
  Add(&nodes, "v", {"x"});
  EXPECT_EQ(Ids(DepsFirst(nodes)), (std::vector<std::string>{"y", "z", "w", "x", "v"}));
}

TEST(DepsFirstTest, NodesOnACycleComeLastInBatchOrder) {
  Nodes nodes;
  Add(&nodes, "p", {"q"});
  Add(&nodes, "r");
  Add(&nodes, "q", {"p"});
  Add(&nodes, "s", {"r", "q"});  // after the cycle, with a dep that is taken
  Add(&nodes, "t", {"r"});
  EXPECT_EQ(Ids(DepsFirst(nodes)), (std::vector<std::string>{"r", "t", "p", "q", "s"}));
}

// A 10,000-node chain listed last node first: each pass of the old algorithm took one
// node (quadratic: seconds on the single committer thread); the order is still deps first.
TEST(DepsFirstTest, ALongChainInReverseOrderComesOutDepsFirst) {
  constexpr int kNodes = 10000;
  Nodes nodes;
  for (int i = kNodes - 1; i >= 0; --i) {
    if (i == 0)
      Add(&nodes, "n0");
    else
      Add(&nodes, "n" + std::to_string(i), {"n" + std::to_string(i - 1)});
  }
  std::vector<const v1::ProgramNode*> order = DepsFirst(nodes);
  ExpectDepsFirst(nodes, order);
  ASSERT_EQ(order.size(), static_cast<size_t>(kNodes));
  for (int i = 0; i < kNodes; ++i) ASSERT_EQ(order[i]->id(), "n" + std::to_string(i));
}

// A wide fan-in listed backwards: everything that feeds the sink comes before it.
TEST(DepsFirstTest, AReversedFanInComesOutDepsFirst) {
  constexpr int kLeaves = 5000;
  Nodes nodes;
  std::vector<std::string> leaves;
  for (int i = 0; i < kLeaves; ++i) leaves.push_back("leaf" + std::to_string(i));
  Add(&nodes, "sink", leaves);
  for (int i = kLeaves - 1; i >= 0; --i) Add(&nodes, leaves[i]);
  std::vector<const v1::ProgramNode*> order = DepsFirst(nodes);
  ExpectDepsFirst(nodes, order);
  EXPECT_EQ(order.back()->id(), "sink");
}

}  // namespace
}  // namespace switchyard::service
