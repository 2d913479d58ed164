#include <gtest/gtest.h>

#include "net_budget/discovery.h"
#include "proto/json.h"

namespace switchyard::net_budget {
namespace {

std::string Sample() {
  return std::move(proto::ReadFile(std::string(SY_SOURCE_DIR) +
                                   "/tests/net_budget/nvidia_smi_topo_sample.txt"))
      .value();
}

TEST(NvidiaSmiTopoTest, ParsesCapturedSample) {
  auto t = ParseNvidiaSmiTopo(Sample());
  ASSERT_TRUE(t.ok()) << t.status();
  using R = NvidiaSmiTopo::Relation;
  EXPECT_EQ(t->devices, (std::vector<std::string>{"GPU0", "GPU1", "GPU2", "GPU3", "NIC0", "NIC1"}));
  ASSERT_EQ(t->matrix.size(), 6u);
  EXPECT_EQ(t->matrix[0][0].relation, R::kSelf);
  EXPECT_EQ(t->matrix[0][1].relation, R::kNvLink);
  EXPECT_EQ(t->matrix[0][1].nvlinks, 18);
  EXPECT_EQ(t->matrix[0][4].relation, R::kPix);
  EXPECT_EQ(t->matrix[1][4].relation, R::kPxb);
  EXPECT_EQ(t->matrix[0][5].relation, R::kSys);
  EXPECT_EQ(t->cpu_affinity[2], "48-95,144-191");
  EXPECT_EQ(t->numa_affinity[2], "1");
  EXPECT_EQ(t->numa_affinity[4], "");
  EXPECT_EQ(t->nic_legend, (std::vector<std::pair<std::string, std::string>>{{"NIC0", "mlx5_0"},
                                                                             {"NIC1", "mlx5_1"}}));
}

TEST(NvidiaSmiTopoTest, ParsesOlderFormatWithoutNicLegend) {
  std::string text =
      "\tGPU0\tGPU1\tmlx5_0\tCPU Affinity\n"
      "GPU0\t X \tPHB\tNODE\t0-11\n"
      "GPU1\tPHB\t X \tSOC\t0-11\n"
      "mlx5_0\tNODE\tSOC\t X \t\n";
  auto t = ParseNvidiaSmiTopo(text);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->matrix[0][1].relation, NvidiaSmiTopo::Relation::kPhb);
  EXPECT_EQ(t->matrix[0][2].relation, NvidiaSmiTopo::Relation::kNode);
  EXPECT_EQ(t->matrix[1][2].relation, NvidiaSmiTopo::Relation::kSys);
  EXPECT_EQ(t->cpu_affinity[0], "0-11");
}

TEST(NvidiaSmiTopoTest, RejectsMalformedText) {
  EXPECT_EQ(ParseNvidiaSmiTopo("").status().message(), "nvidia-smi topo: empty output");
  EXPECT_EQ(ParseNvidiaSmiTopo("\tGPU0\tGPU1\nGPU0\t X \tXYZ\n").status().message(),
            "nvidia-smi topo line 2: unknown relation 'XYZ' between GPU0 and GPU1");
  EXPECT_EQ(ParseNvidiaSmiTopo("\tGPU0\tGPU1\nGPU1\t X \tNV4\n").status().message(),
            "nvidia-smi topo line 2: expected row 'GPU0', got 'GPU1'");
  EXPECT_EQ(ParseNvidiaSmiTopo("\tGPU0\tGPU1\nGPU0\t X \n").status().message(),
            "nvidia-smi topo line 2: row 'GPU0' has 1 cells, expected 2");
}

TEST(CpuListTest, Parses) {
  EXPECT_EQ(*ParseCpuList("0-3,8,10-11\n"), (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_TRUE(ParseCpuList("").value().empty());
  EXPECT_EQ(ParseCpuList("3-1").status().message(), "cpulist '3-1': bad item '3-1'");
  EXPECT_TRUE(ParseCpuList("a").status().IsInvalidArgument());
}

}  // namespace
}  // namespace switchyard::net_budget
