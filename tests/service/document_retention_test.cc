// Retention of the fronts' documents (stored OpenAI Responses): a document stored longer
// ago than ServiceOptions::document_retention_s (by the service's clock, a ManualClock
// here) is no longer read, and the sweep deletes it from the store, oldest first, keeping
// fresh ones; stored times survive a reopen, a reopen past the retention deletes, and a
// document stored before times were kept counts from the first open that keeps them.
#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include <filesystem>
#include <future>

#include "service/service.h"

namespace switchyard::service {
namespace {

constexpr int64_t kRetentionS = 100;

class DocumentRetentionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/sy_doc_retention_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(dir_);
    Reopen();
  }
  void TearDown() override {
    svc_.reset();
    std::filesystem::remove_all(dir_);
  }
  void Reopen(int64_t retention_s = kRetentionS) {
    svc_.reset();
    ServiceOptions o;
    o.data_dir = dir_;
    o.document_retention_s = retention_s;
    o.sync_writes = false;  // a reopen in this process reads what the OS holds
    o.scheduler.enabled = false;
    auto s = Service::Open(o, &clock_);
    ASSERT_TRUE(s.ok()) << s.status();
    svc_ = std::move(*s);
  }
  Status Put(const std::string& id, const std::string& v) {
    std::promise<Status> p;
    svc_->PutDocumentAsync("acme", "response", id, v, [&p](const Status& st) { p.set_value(st); });
    return p.get_future().get();
  }
  std::optional<std::string> Get(const std::string& id) {
    auto r = svc_->GetDocument("acme", "response", id);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : std::nullopt;
  }
  // Whether `id` is still in the store: read with retention off.
  bool Stored(const std::string& id) {
    Reopen(/*retention_s=*/0);
    bool stored = Get(id).has_value();
    Reopen();
    return stored;
  }
  int64_t Sweep() {
    auto n = svc_->SweepDocuments();
    EXPECT_TRUE(n.ok()) << n.status();
    EXPECT_TRUE(svc_->Flush().ok());
    return n.ok() ? *n : -1;
  }

  ManualClock clock_{Time::FromSeconds(1'700'000'000)};
  std::string dir_;
  std::unique_ptr<Service> svc_;
};

TEST_F(DocumentRetentionTest, TheSweepDeletesExpiredDocumentsAndKeepsFreshOnes) {
  ASSERT_TRUE(Put("old", "o").ok());
  clock_.Advance(Seconds(60));
  ASSERT_TRUE(Put("new", "n").ok());
  clock_.Advance(Seconds(kRetentionS));  // "old" is 160 s old, "new" 100 s: at the limit
  EXPECT_EQ(Get("old"), std::nullopt) << "an expired document is not read, swept or not";
  EXPECT_EQ(Get("new"), "n");
  EXPECT_EQ(Sweep(), 1);
  EXPECT_EQ(Sweep(), 0) << "nothing more is due";
  EXPECT_EQ(svc_->documents_expired(), 1u);
  EXPECT_FALSE(Stored("old")) << "deleted from the store, not only hidden";
  EXPECT_TRUE(Stored("new"));
  clock_.Advance(Seconds(1));
  EXPECT_EQ(Get("new"), std::nullopt);
  EXPECT_EQ(Sweep(), 1);
  EXPECT_FALSE(Stored("new"));
}

TEST_F(DocumentRetentionTest, StoringADocumentSweepsExpiredOnesByTheClock) {
  ASSERT_TRUE(Put("a", "1").ok());
  ASSERT_TRUE(Put("b", "2").ok());
  clock_.Advance(Seconds(kRetentionS + 1));
  ASSERT_TRUE(Put("c", "3").ok());  // sweeps: a second of the clock has passed
  ASSERT_TRUE(svc_->Flush().ok());
  EXPECT_EQ(svc_->documents_expired(), 2u);
  EXPECT_FALSE(Stored("a"));
  EXPECT_FALSE(Stored("b"));
  EXPECT_TRUE(Stored("c"));
}

TEST_F(DocumentRetentionTest, AReplacedDocumentCountsFromItsLastPutAndADeletedOneIsNotCounted) {
  ASSERT_TRUE(Put("x", "first").ok());
  ASSERT_TRUE(Put("gone", "g").ok());
  std::promise<Status> p;
  svc_->DeleteDocumentAsync("acme", "response", "gone",
                            [&p](const Status& st) { p.set_value(st); });
  ASSERT_TRUE(p.get_future().get().ok());
  clock_.Advance(Seconds(80));
  ASSERT_TRUE(Put("x", "second").ok());
  clock_.Advance(Seconds(40));  // 120 s since the first put, 40 s since the second
  EXPECT_EQ(Sweep(), 0) << "the first put's index entry is stale; the deleted one too";
  EXPECT_EQ(Get("x"), "second");
  clock_.Advance(Seconds(61));
  EXPECT_EQ(Sweep(), 1);
  EXPECT_EQ(Get("x"), std::nullopt);
  EXPECT_FALSE(Stored("x"));
}

TEST_F(DocumentRetentionTest, StoredTimesSurviveAReopenAndAReopenPastRetentionDeletes) {
  ASSERT_TRUE(Put("a", "1").ok());
  clock_.Advance(Seconds(50));
  ASSERT_TRUE(Put("b", "2").ok());
  clock_.Advance(Seconds(60));  // a: 110 s, b: 60 s
  Reopen();                     // the sweep at Open
  EXPECT_EQ(svc_->documents_expired(), 1u);
  EXPECT_EQ(Get("b"), "2");
  clock_.Advance(Seconds(41));
  Reopen();
  EXPECT_EQ(svc_->documents_expired(), 1u);
  EXPECT_FALSE(Stored("a"));
  EXPECT_FALSE(Stored("b"));
}

TEST_F(DocumentRetentionTest, ManyExpiredDocumentsGoInBatches) {
  const int n = static_cast<int>(Service::kDocumentSweepBatch) + 10;
  for (int i = 0; i < n; ++i) ASSERT_TRUE(Put("r" + std::to_string(i), "v").ok());
  clock_.Advance(Seconds(kRetentionS + 1));
  EXPECT_EQ(Sweep(), static_cast<int64_t>(Service::kDocumentSweepBatch));
  EXPECT_EQ(Sweep(), 10);
  for (int i = 0; i < n; ++i) ASSERT_TRUE(Put("s" + std::to_string(i), "v").ok());
  clock_.Advance(Seconds(kRetentionS + 1));
  Reopen();  // Open sweeps every batch
  EXPECT_EQ(svc_->documents_expired(), static_cast<uint64_t>(n));
  EXPECT_FALSE(Stored("s0"));
  EXPECT_FALSE(Stored("s" + std::to_string(n - 1)));
}

TEST_F(DocumentRetentionTest, WithoutRetentionNothingExpires) {
  Reopen(/*retention_s=*/0);
  ASSERT_TRUE(Put("kept", "k").ok());
  clock_.Advance(Seconds(10 * 365 * 24 * 3600.0));
  EXPECT_EQ(Sweep(), 0);
  EXPECT_EQ(Get("kept"), "k");
}

TEST_F(DocumentRetentionTest, ADocumentStoredWithoutATimeCountsFromTheFirstOpenThatKeepsThem) {
  svc_.reset();
  std::filesystem::remove_all(dir_);
  {  // a store as a version before stored times wrote it: the document only
    rocksdb::Options o;
    o.create_if_missing = true;
    rocksdb::DB* raw = nullptr;
    std::filesystem::create_directories(dir_);
    rocksdb::Status opened = rocksdb::DB::Open(o, dir_ + "/state", &raw);
    ASSERT_TRUE(opened.ok()) << opened.ToString();
    std::unique_ptr<rocksdb::DB> db(raw);
    ASSERT_TRUE(
        db->Put(rocksdb::WriteOptions(), std::string("doc/response/acme\0legacy", 24), "L").ok());
  }
  Reopen();
  EXPECT_EQ(Get("legacy"), "L");
  clock_.Advance(Seconds(kRetentionS));
  Reopen();
  EXPECT_EQ(Get("legacy"), "L") << "its time is the first open's, not the epoch";
  clock_.Advance(Seconds(1));
  EXPECT_EQ(Sweep(), 1);
  EXPECT_FALSE(Stored("legacy"));
}

}  // namespace
}  // namespace switchyard::service
