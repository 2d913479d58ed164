#include "kv_tiers/layout.h"

#include <gtest/gtest.h>

namespace switchyard::kv_tiers {
namespace {

TEST(KvLayout, Llama8BFromConfigFile) {
  auto l = KvLayout::FromJsonFile(std::string(SY_SOURCE_DIR) + "/configs/models/llama-3.1-8b.json");
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->bytes_per_token(), 131072u);
  EXPECT_EQ(l->tokens_per_block(), 16u);
  EXPECT_EQ(l->bytes_per_block(), 2u << 20);
  EXPECT_EQ(l->bytes_per_block_layer(), (2u << 20) / 32);
  EXPECT_EQ(l->BlocksForTokens(0), 0u);
  EXPECT_EQ(l->BlocksForTokens(16), 1u);
  EXPECT_EQ(l->BlocksForTokens(17), 2u);
}

TEST(KvLayout, Llama70BWithCustomBlockSize) {
  auto l =
      KvLayout::FromJsonFile(std::string(SY_SOURCE_DIR) + "/configs/models/llama-3.1-70b.json", 32);
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->bytes_per_token(), 327680u);
  EXPECT_EQ(l->bytes_per_block(), 327680u * 32);
}

TEST(KvLayout, DtypeBytes) {
  EXPECT_EQ(DtypeBytes(v1::FP8).value(), 1u);
  EXPECT_EQ(DtypeBytes(v1::FP16).value(), 2u);
  EXPECT_EQ(DtypeBytes(v1::FP32).value(), 4u);
  EXPECT_TRUE(DtypeBytes(v1::DTYPE_UNSPECIFIED).status().IsInvalidArgument());
}

TEST(KvLayout, RejectsBadConfigsNamingTheField) {
  v1::ModelConfig c;
  c.set_name("broken");
  c.set_num_layers(2);
  c.set_num_kv_heads(2);
  c.set_head_dim(0);
  c.set_kv_dtype(v1::BF16);
  auto l = KvLayout::FromModelConfig(c);
  ASSERT_FALSE(l.ok());
  EXPECT_NE(l.status().message().find("head_dim"), std::string::npos);
  c.set_head_dim(8);
  EXPECT_FALSE(KvLayout::FromModelConfig(c, 0).ok());
  c.set_kv_dtype(v1::DTYPE_UNSPECIFIED);
  EXPECT_FALSE(KvLayout::FromModelConfig(c).ok());
  EXPECT_TRUE(KvLayout::FromJsonFile("/nonexistent/model.json").status().code() != StatusCode::kOk);
}

}  // namespace
}  // namespace switchyard::kv_tiers
