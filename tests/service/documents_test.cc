// The fronts' documents (stored OpenAI Responses): durable across a reopen, per tenant,
// deleted on request and by an expiry predicate.
#include <gtest/gtest.h>

#include <filesystem>
#include <future>

#include "service/service.h"

namespace switchyard::service {
namespace {

class DocumentsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/sy_documents_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(dir_);
    Reopen();
  }
  void TearDown() override {
    svc_.reset();
    std::filesystem::remove_all(dir_);
  }
  void Reopen() {
    svc_.reset();
    ServiceOptions o;
    o.data_dir = dir_;
    o.scheduler.engines_run_llm = false;
    auto s = Service::Open(o, &clock_);
    ASSERT_TRUE(s.ok()) << s.status();
    svc_ = std::move(*s);
  }
  // Waits for the asynchronous call's `done` (the store's committer runs it).
  template <typename Fn>
  Status Wait(Fn start) {
    std::promise<Status> p;
    start([&p](const Status& st) { p.set_value(st); });
    return p.get_future().get();
  }
  Status Put(const std::string& tenant, const std::string& id, const std::string& v) {
    return Wait(
        [&](Service::Done d) { svc_->PutDocumentAsync(tenant, "response", id, v, std::move(d)); });
  }
  std::optional<std::string> Get(const std::string& tenant, const std::string& id) {
    auto r = svc_->GetDocument(tenant, "response", id);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : std::nullopt;
  }

  ManualClock clock_{Time::FromSeconds(1000)};
  std::string dir_;
  std::unique_ptr<Service> svc_;
};

TEST_F(DocumentsTest, APutDocumentSurvivesAReopenAndIsItsTenantsOnly) {
  ASSERT_TRUE(Put("acme", "resp_1", "first").ok());
  ASSERT_TRUE(Put("acme", "resp_1", "second").ok());  // replaces
  ASSERT_TRUE(Put("globex", "resp_2", "theirs").ok());
  Reopen();
  EXPECT_EQ(Get("acme", "resp_1"), "second");
  EXPECT_EQ(Get("globex", "resp_1"), std::nullopt);
  EXPECT_EQ(Get("acme", "resp_2"), std::nullopt);
  EXPECT_EQ(Get("globex", "resp_2"), "theirs");
}

TEST_F(DocumentsTest, DeleteAndExpiryRemoveThemDurably) {
  ASSERT_TRUE(Put("acme", "old", "t=1").ok());
  ASSERT_TRUE(Put("acme", "new", "t=9").ok());
  ASSERT_TRUE(Put("acme", "gone", "t=9").ok());
  ASSERT_TRUE(Wait([&](Service::Done d) {
                svc_->DeleteDocumentAsync("acme", "response", "gone", std::move(d));
              }).ok());
  auto erased = svc_->EraseDocuments("response", [](const std::string& v) { return v == "t=1"; });
  ASSERT_TRUE(erased.ok()) << erased.status();
  EXPECT_EQ(*erased, 1);
  ASSERT_TRUE(svc_->Flush().ok());
  Reopen();
  EXPECT_EQ(Get("acme", "old"), std::nullopt);
  EXPECT_EQ(Get("acme", "gone"), std::nullopt);
  EXPECT_EQ(Get("acme", "new"), "t=9");
}

TEST_F(DocumentsTest, BadKeysAreRefusedNamingWhatIsWrong) {
  Status st = Put("acme", "", "v");
  EXPECT_TRUE(st.IsInvalidArgument());
  EXPECT_NE(st.message().find("response id is empty"), std::string::npos) << st;
  st = Put("acme", std::string("a\0b", 3), "v");
  EXPECT_NE(st.message().find("NUL"), std::string::npos) << st;
  auto r = svc_->GetDocument("acme", "", "x");
  EXPECT_TRUE(r.status().IsInvalidArgument());
}

}  // namespace
}  // namespace switchyard::service
