// Membership: the worker document and key layout; a worker's leased registration seen by
// the scheduler's watcher (joined, lost when its keep-alives stop, joined again with a new
// epoch) against a real etcd on loopback (tests/cluster/etcd_process.h).
#include "cluster/membership.h"

#include <gtest/gtest.h>

#include <thread>

#include "base/mutex.h"
#include "tests/cluster/etcd_process.h"
#include "tests/common/wait_until.h"

namespace switchyard::cluster {
namespace {

using testing::EtcdProcess;
using Kind = MembershipEvent::Kind;
using Clock = std::chrono::steady_clock;

constexpr std::chrono::seconds kTtl{2};  // etcd's minimum lease TTL is about 2 s
// For events (a hang guard, with no timing claim: testing::WaitUntil's bound).
constexpr std::chrono::seconds kLongWait{static_cast<int>(::switchyard::testing::kWaitSeconds)};

WorkerInfo Worker(const std::string& id) {
  return WorkerInfo{id, "host-" + id, "10.0.0.7:7400", "sim", "llama-3.1-8b", 0, 1796000000000};
}

TEST(MembershipLayoutTest, KeysAndDocument) {
  EXPECT_EQ(WorkersPrefix("prod"), "/switchyard/prod/workers/");
  EXPECT_EQ(WorkerKey("prod", "w-1"), "/switchyard/prod/workers/w-1");
  EXPECT_TRUE(ValidateName("worker id", "gpu-07.a_1").ok());
  EXPECT_TRUE(ValidateName("worker id", "").IsInvalidArgument());
  EXPECT_TRUE(ValidateName("worker id", "a/b").IsInvalidArgument());
  WorkerInfo info = Worker("w-1");
  info.epoch = 42;
  Result<WorkerInfo> back = DecodeWorkerInfo(EncodeWorkerInfo(info));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, info);
  EXPECT_FALSE(DecodeWorkerInfo("[]").ok());
  EXPECT_FALSE(DecodeWorkerInfo(R"({"host":"h"})").ok());
  EXPECT_FALSE(DecodeWorkerInfo(R"({"workerId":"w","epoch":"x"})").ok());
  EXPECT_FALSE(DecodeWorkerInfo(R"({"workerId":"a/b"})").ok());
}

// Membership events as the watcher reports them, with when they arrived.
class Recorder {
 public:
  void Add(const MembershipEvent& e) {
    MutexLock lock(&mu_);
    events_.push_back({e, Clock::now()});
    cv_.SignalAll();
  }
  // Waits for the n-th event (0-based) of `kind` for `id`; returns its index or -1.
  int WaitFor(Kind kind, const std::string& id, int nth, std::chrono::seconds limit) {
    MutexLock lock(&mu_);
    const auto end = std::chrono::steady_clock::now() + limit;
    for (;;) {
      int seen = 0;
      for (size_t i = 0; i < events_.size(); ++i) {
        if (events_[i].first.kind == kind && events_[i].first.worker.worker_id == id &&
            seen++ == nth)
          return static_cast<int>(i);
      }
      if (!cv_.WaitUntil(&mu_, end)) return -1;
    }
  }
  std::pair<MembershipEvent, Clock::time_point> At(int i) {
    MutexLock lock(&mu_);
    return events_.at(i);
  }
  size_t Count(Kind kind) {
    MutexLock lock(&mu_);
    size_t n = 0;
    for (auto& e : events_) n += e.first.kind == kind;
    return n;
  }

 private:
  Mutex mu_;
  CondVar cv_;
  std::vector<std::pair<MembershipEvent, Clock::time_point>> events_;
};

class MembershipTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    etcd_ = new EtcdProcess();
    why_ = etcd_->Start();
  }
  static void TearDownTestSuite() {
    delete etcd_;
    etcd_ = nullptr;
  }
  void SetUp() override {
    SY_REQUIRE_ETCD_OR_SKIP(why_);
    auto c = EtcdClient::Create(etcd_->url());
    ASSERT_TRUE(c.ok()) << c.status();
    client_ = *c;
    cluster_ = ::testing::UnitTest::GetInstance()->current_test_info()->name();
  }
  std::unique_ptr<MembershipWatcher> Watch() {
    auto w = MembershipWatcher::Start(client_, cluster_,
                                      [this](const MembershipEvent& e) { events_.Add(e); });
    EXPECT_TRUE(w.ok()) << w.status();
    return w.ok() ? std::move(*w) : nullptr;
  }
  std::unique_ptr<Registration> Register(const std::string& id) {
    auto r = Registration::Start(client_, cluster_, Worker(id), RegistrationOptions{kTtl});
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? std::move(*r) : nullptr;
  }
  static EtcdProcess* etcd_;
  static std::string why_;
  std::shared_ptr<EtcdClient> client_;
  std::string cluster_;
  Recorder events_;
};
EtcdProcess* MembershipTest::etcd_ = nullptr;
std::string MembershipTest::why_;

TEST_F(MembershipTest, RegisteredWorkerAppearsToTheWatcher) {
  auto before = Register("w-before");  // found by the first listing
  ASSERT_TRUE(before);
  auto watcher = Watch();
  ASSERT_TRUE(watcher);
  ASSERT_GE(events_.WaitFor(Kind::kJoined, "w-before", 0, kLongWait), 0);
  auto after = Register("w-after");  // seen through the watch
  ASSERT_TRUE(after);
  int joined = events_.WaitFor(Kind::kJoined, "w-after", 0, kLongWait);
  ASSERT_GE(joined, 0);
  MembershipEvent e = events_.At(joined).first;
  EXPECT_EQ(e.worker, after->info());
  EXPECT_GT(e.worker.epoch, 0);
  EXPECT_GT(e.revision, 0);
  auto members = watcher->Members();
  ASSERT_EQ(members.size(), 2u);
  EXPECT_EQ(members.at("w-before"), before->info());

  Result<EtcdRange> raw = client_->Range(WorkerKey(cluster_, "w-after"));
  ASSERT_TRUE(raw.ok() && raw->kvs.size() == 1) << raw.status();
  EXPECT_EQ(raw->kvs[0].lease, after->lease());
  Result<WorkerInfo> doc = DecodeWorkerInfo(raw->kvs[0].value);
  ASSERT_TRUE(doc.ok()) << doc.status();
  EXPECT_EQ(*doc, after->info());

  // A clean stop revokes the lease: lost at once, not after the TTL.
  ASSERT_TRUE(before->Stop().ok());
  ASSERT_GE(events_.WaitFor(Kind::kLost, "w-before", 0, kLongWait), 0);
  EXPECT_EQ(watcher->Members().count("w-before"), 0u);
}

// A worker killed with SIGKILL stops renewing without revoking: the watcher reports it
// lost once the lease expires, and admits it again (a new epoch) when it registers anew.
TEST_F(MembershipTest, WorkerWhoseKeepAlivesStopIsLostThenAdmittedAgain) {
  auto watcher = Watch();
  ASSERT_TRUE(watcher);
  auto worker = Register("w-1");
  ASSERT_TRUE(worker);
  ASSERT_GE(events_.WaitFor(Kind::kJoined, "w-1", 0, kLongWait), 0);
  // Keep-alives hold the key well past the TTL.
  EXPECT_LT(events_.WaitFor(Kind::kLost, "w-1", 0, 2 * kTtl), 0);
  EXPECT_TRUE(worker->last_error().ok()) << worker->last_error();
  const int64_t old_epoch = worker->info().epoch;

  worker->Abandon();  // nothing revokes the lease: only its expiry can make the worker lost
  int lost = events_.WaitFor(Kind::kLost, "w-1", 0, kLongWait);
  ASSERT_GE(lost, 0) << "not reported lost once the lease expired";
  EXPECT_EQ(events_.At(lost).first.worker.epoch, old_epoch);
  EXPECT_TRUE(watcher->Members().empty());

  auto again = Register("w-1");
  ASSERT_TRUE(again);
  int joined = events_.WaitFor(Kind::kJoined, "w-1", 1, kLongWait);
  ASSERT_GE(joined, 0);
  EXPECT_GT(events_.At(joined).first.worker.epoch, old_epoch);
  EXPECT_EQ(events_.At(joined).first.worker, again->info());
  EXPECT_EQ(events_.Count(Kind::kLost), 1u);
}

// A lease that expires under a live worker (e.g. a partition longer than the TTL): the
// registration finds it gone and registers again with a new epoch; the watcher reports
// lost, then joined.
TEST_F(MembershipTest, RegistrationComesBackAfterItsLeaseIsGone) {
  auto watcher = Watch();
  ASSERT_TRUE(watcher);
  auto worker = Register("w-2");
  ASSERT_TRUE(worker);
  ASSERT_GE(events_.WaitFor(Kind::kJoined, "w-2", 0, kLongWait), 0);
  const int64_t old_epoch = worker->info().epoch;
  ASSERT_TRUE(client_->LeaseRevoke(worker->lease()).ok());  // what an expiry does
  ASSERT_GE(events_.WaitFor(Kind::kLost, "w-2", 0, kLongWait), 0);
  int joined = events_.WaitFor(Kind::kJoined, "w-2", 1, kLongWait);
  ASSERT_GE(joined, 0);
  const int64_t new_epoch = events_.At(joined).first.worker.epoch;
  EXPECT_GT(new_epoch, old_epoch);
  // The registration records its new epoch just after etcd has it (the watcher may be
  // first).
  EXPECT_TRUE(::switchyard::testing::WaitUntil([&] { return worker->info().epoch == new_epoch; }))
      << worker->info().epoch << " != " << new_epoch;
  EXPECT_TRUE(worker->last_error().ok()) << worker->last_error();
}

TEST_F(MembershipTest, UpdatedDocumentIsReportedAsUpdate) {
  auto watcher = Watch();
  ASSERT_TRUE(watcher);
  auto worker = Register("w-3");
  ASSERT_TRUE(worker);
  ASSERT_GE(events_.WaitFor(Kind::kJoined, "w-3", 0, kLongWait), 0);
  WorkerInfo changed = worker->info();
  changed.control_address = "10.0.0.7:7401";
  ASSERT_TRUE(
      client_->Put(WorkerKey(cluster_, "w-3"), EncodeWorkerInfo(changed), worker->lease()).ok());
  ASSERT_TRUE(client_->Put(WorkerKey(cluster_, "junk"), "not json").ok());  // skipped
  int updated = events_.WaitFor(Kind::kUpdated, "w-3", 0, kLongWait);
  ASSERT_GE(updated, 0);
  EXPECT_EQ(events_.At(updated).first.worker, changed);
  EXPECT_EQ(watcher->Members().size(), 1u);
}

TEST(MembershipStoppedTest, StartFailsNamingTheEndpoint) {
  EtcdProcess etcd;
  std::string why = etcd.Start();
  SY_REQUIRE_ETCD_OR_SKIP(why);
  const std::string url = etcd.url();
  etcd.Kill();
  auto client = EtcdClient::Create(url, EtcdOptions{std::chrono::milliseconds(2000)});
  ASSERT_TRUE(client.ok()) << client.status();
  auto reg = Registration::Start(*client, "c", Worker("w"));
  ASSERT_FALSE(reg.ok());
  EXPECT_TRUE(reg.status().IsUnavailable()) << reg.status();
  EXPECT_NE(reg.status().message().find(url), std::string::npos) << reg.status();
  auto watcher = MembershipWatcher::Start(*client, "c", nullptr);
  ASSERT_FALSE(watcher.ok());
  EXPECT_NE(watcher.status().message().find(url), std::string::npos) << watcher.status();
  EXPECT_TRUE(Registration::Start(*client, "c/x", Worker("w")).status().IsInvalidArgument());
}

}  // namespace
}  // namespace switchyard::cluster
