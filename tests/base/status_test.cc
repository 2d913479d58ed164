#include "base/status.h"

#include <gtest/gtest.h>

#include "base/result.h"

namespace switchyard {
namespace {

TEST(StatusTest, DefaultIsOk) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kOk);
  EXPECT_EQ(s.ToString(), "OK");
  EXPECT_FALSE(s.IsRetryable());
}

TEST(StatusTest, NamedConstructorsSetCodeAndRetryability) {
  EXPECT_TRUE(Status::NotFound("x").IsNotFound());
  EXPECT_FALSE(Status::NotFound("x").IsRetryable());
  EXPECT_TRUE(Status::ResourceExhausted("quota").IsRetryable());
  EXPECT_TRUE(Status::Unavailable("peer down", ErrorScope::kRemote).IsRetryable());
  EXPECT_EQ(Status::Unavailable("peer down", ErrorScope::kRemote).scope(), ErrorScope::kRemote);
  EXPECT_FALSE(Status::DataLoss("bad checksum").IsRetryable());
  EXPECT_TRUE(Status::InvalidArgument("bad").IsInvalidArgument());
}

TEST(StatusTest, ToStringNamesCodeMessageAndFlags) {
  EXPECT_EQ(Status::InvalidArgument("node 'b' unknown").ToString(),
            "InvalidArgument: node 'b' unknown");
  EXPECT_EQ(Status::Unavailable("link down", ErrorScope::kLink).ToString(),
            "Unavailable: link down [retryable, scope=link]");
  EXPECT_EQ(Status::DataLoss("torn", ErrorScope::kTransfer).ToString(),
            "DataLoss: torn [scope=transfer]");
}

TEST(StatusTest, WithAndAnnotateCopy) {
  Status base = Status::Internal("boom");
  Status r = base.WithRetryable(true).WithScope(ErrorScope::kTier);
  EXPECT_TRUE(r.IsRetryable());
  EXPECT_EQ(r.scope(), ErrorScope::kTier);
  EXPECT_FALSE(base.IsRetryable());
  EXPECT_EQ(base.Annotate("loading").message(), "loading: boom");
  EXPECT_TRUE(Status::OK().Annotate("ctx").ok());
}

Status FailIf(bool fail) { return fail ? Status::Aborted("stop") : Status::OK(); }

Status Chain(bool fail, int* reached) {
  SY_RETURN_IF_ERROR(FailIf(fail));
  *reached = 1;
  return Status::OK();
}

TEST(StatusTest, ReturnIfErrorPropagates) {
  int reached = 0;
  EXPECT_EQ(Chain(true, &reached).code(), StatusCode::kAborted);
  EXPECT_EQ(reached, 0);
  EXPECT_TRUE(Chain(false, &reached).ok());
  EXPECT_EQ(reached, 1);
}

Result<int> Half(int v) {
  if (v % 2) return Status::InvalidArgument("odd: " + std::to_string(v));
  return v / 2;
}

Result<int> Quarter(int v) {
  SY_ASSIGN_OR_RETURN(int h, Half(v));
  SY_ASSIGN_OR_RETURN(int q, Half(h));
  return q;
}

TEST(ResultTest, ValueAndError) {
  auto r = Quarter(8);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, 2);
  auto e = Quarter(6);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().message(), "odd: 3");
  EXPECT_EQ(e.value_or(-1), -1);
}

TEST(ResultTest, OkStatusIsNotAValue) {
  Result<int> r{Status::OK()};
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInternal);
}

TEST(ResultDeathTest, ValueOfErrorAborts) {
  Result<int> r{Status::NotFound("gone")};
  EXPECT_DEATH((void)r.value(), "gone");
}

TEST(ResultTest, MoveOnlyValues) {
  Result<std::unique_ptr<int>> r = std::make_unique<int>(7);
  ASSERT_TRUE(r.ok());
  std::unique_ptr<int> p = std::move(r).value();
  EXPECT_EQ(*p, 7);
}

}  // namespace
}  // namespace switchyard
