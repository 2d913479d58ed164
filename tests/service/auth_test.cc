// Bearer tokens to tenants and the admin principal (service/auth.h).
#include "service/auth.h"

#include <gtest/gtest.h>

namespace switchyard::service {
namespace {

constexpr char kToken[] = "acme-token-0123456789";
constexpr char kAdmin[] = "admin-token-0123456789";

Auth Make() {
  v1::ServiceConfig cfg;
  auto* t = cfg.add_tenants();
  t->set_name("acme");
  t->set_token(kToken);
  cfg.set_admin_token(kAdmin);
  auto auth = Auth::Create(cfg, ::testing::TempDir());  // nothing is written: all configured
  EXPECT_TRUE(auth.ok()) << auth.status();
  return std::move(*auth);
}

TEST(AuthTest, BearerTokenNamesTheTenantOrTheAdmin) {
  Auth auth = Make();
  auto who = auth.Authenticate(std::string("Bearer ") + kToken);
  ASSERT_TRUE(who.has_value());
  EXPECT_EQ(who->tenant, "acme");
  EXPECT_FALSE(who->admin);
  who = auth.Authenticate(std::string("Bearer ") + kAdmin);
  ASSERT_TRUE(who.has_value());
  EXPECT_TRUE(who->admin);
  EXPECT_FALSE(auth.Authenticate("Bearer wrong-token-0123456789"));
  EXPECT_FALSE(auth.Authenticate(kToken)) << "no scheme";
  EXPECT_FALSE(auth.Authenticate(std::string("Basic ") + kToken));
  EXPECT_FALSE(auth.Authenticate(std::string("Bearer") + kToken)) << "no space";
  EXPECT_FALSE(auth.Authenticate("Bearer "));
  EXPECT_FALSE(auth.Authenticate(""));
}

// RFC 7235 section 2.1: the auth-scheme is case-insensitive.
TEST(AuthTest, TheBearerSchemeIsCaseInsensitive) {
  Auth auth = Make();
  for (const char* scheme : {"bearer ", "BEARER ", "bEaReR ", "Bearer  "}) {
    auto who = auth.Authenticate(scheme + std::string(kToken));
    ASSERT_TRUE(who.has_value()) << "'" << scheme << "'";
    EXPECT_EQ(who->tenant, "acme");
  }
  EXPECT_FALSE(auth.Authenticate(std::string("bearer ") + "ACME-TOKEN-0123456789"))
      << "the token itself is case-sensitive";
}

}  // namespace
}  // namespace switchyard::service
