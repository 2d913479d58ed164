// EtcdClient: URL parsing and encoding without etcd; the gateway calls, the watch stream
// and the errors against a real etcd on loopback (tests/cluster/etcd_process.h).
#include "cluster/etcd_client.h"

#include <gtest/gtest.h>

#include "base/mutex.h"
#include "tests/cluster/etcd_process.h"

namespace switchyard::cluster {
namespace {

using testing::EtcdProcess;

TEST(EtcdUrlTest, AcceptsHostAndPort) {
  Result<EtcdEndpoint> ep = ParseEtcdUrl("http://127.0.0.1:2379/");
  ASSERT_TRUE(ep.ok()) << ep.status();
  EXPECT_EQ(ep->url, "http://127.0.0.1:2379");
  EXPECT_EQ(ep->host, "127.0.0.1");
  EXPECT_EQ(ep->port, "2379");
  Result<EtcdEndpoint> v6 = ParseEtcdUrl("http://[::1]:2379");
  ASSERT_TRUE(v6.ok()) << v6.status();
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->authority, "[::1]:2379");
}

TEST(EtcdUrlTest, RefusesWhatItCannotUse) {
  struct Case {
    const char* url;
    const char* why;
  } cases[] = {{"https://etcd:2379", "https is not supported"},
               {"etcd:2379", "not an http:// URL"},
               {"http://etcd", "no port"},
               {"http://etcd:0", "bad port"},
               {"http://etcd:65536", "bad port"},
               {"http://etcd:23x9", "bad port"},
               {"http://etcd:2379/v3", "only scheme, host and port"},
               {"http://:2379", "no host"}};
  for (const Case& c : cases) {
    Result<EtcdEndpoint> ep = ParseEtcdUrl(c.url);
    ASSERT_FALSE(ep.ok()) << c.url;
    EXPECT_TRUE(ep.status().IsInvalidArgument()) << c.url;
    EXPECT_NE(ep.status().message().find(c.why), std::string::npos) << ep.status();
    EXPECT_NE(ep.status().message().find(c.url), std::string::npos) << ep.status();
  }
  EXPECT_FALSE(EtcdClient::Create("https://etcd:2379").ok());
}

TEST(EtcdEncodingTest, Base64RoundTripsEveryLength) {
  std::string bytes;
  for (int i = 0; i < 40; ++i) {
    std::string enc = Base64Encode(bytes);
    EXPECT_EQ(enc.size() % 4, 0u);
    Result<std::string> dec = Base64Decode(enc);
    ASSERT_TRUE(dec.ok()) << dec.status();
    EXPECT_EQ(*dec, bytes);
    bytes.push_back(static_cast<char>(i * 37 + 200));
  }
  EXPECT_EQ(Base64Encode("foo"), "Zm9v");
  EXPECT_EQ(Base64Encode("fo"), "Zm8=");
  EXPECT_FALSE(Base64Decode("Zm9v!").ok());
  EXPECT_FALSE(Base64Decode("Zm=v").ok());
}

TEST(EtcdEncodingTest, PrefixRangeEnd) {
  EXPECT_EQ(PrefixRangeEnd("/a/"), "/a0");
  EXPECT_EQ(PrefixRangeEnd(std::string("a\xff", 2)), "b");
  EXPECT_EQ(PrefixRangeEnd(std::string("\xff\xff", 2)), std::string(1, '\0'));
  EXPECT_EQ(PrefixRangeEnd(""), std::string(1, '\0'));
}

class EtcdClientTest : public ::testing::Test {
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
    prefix_ =
        std::string("/t/") + ::testing::UnitTest::GetInstance()->current_test_info()->name() + "/";
  }
  static EtcdProcess* etcd_;
  static std::string why_;
  std::shared_ptr<EtcdClient> client_;
  std::string prefix_;
};
EtcdProcess* EtcdClientTest::etcd_ = nullptr;
std::string EtcdClientTest::why_;

TEST_F(EtcdClientTest, PutRangeDeleteRoundTrip) {
  std::string binary("v\0\xff\n", 4);
  Result<int64_t> r1 = client_->Put(prefix_ + "a", "one");
  ASSERT_TRUE(r1.ok()) << r1.status();
  Result<int64_t> r2 = client_->Put(prefix_ + "b", binary);
  ASSERT_TRUE(r2.ok()) << r2.status();
  EXPECT_GT(*r2, *r1);
  ASSERT_TRUE(client_->Put(prefix_ + "a", "uno").ok());
  ASSERT_TRUE(client_->Put(prefix_.substr(0, prefix_.size() - 1) + "x", "outside").ok());

  Result<EtcdRange> range = client_->Range(prefix_);
  ASSERT_TRUE(range.ok()) << range.status();
  ASSERT_EQ(range->kvs.size(), 2u);
  EXPECT_EQ(range->kvs[0].key, prefix_ + "a");
  EXPECT_EQ(range->kvs[0].value, "uno");
  EXPECT_EQ(range->kvs[0].version, 2);
  EXPECT_EQ(range->kvs[0].create_revision, *r1);
  EXPECT_GT(range->kvs[0].mod_revision, *r2);
  EXPECT_EQ(range->kvs[1].value, binary);
  EXPECT_EQ(range->kvs[1].mod_revision, *r2);
  EXPECT_GE(range->revision, range->kvs[0].mod_revision);

  Result<int64_t> deleted = client_->Delete(prefix_ + "a");
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  EXPECT_EQ(*deleted, 1);
  deleted = client_->Delete(prefix_ + "a");
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  EXPECT_EQ(*deleted, 0);
  range = client_->Range(prefix_);
  ASSERT_TRUE(range.ok()) << range.status();
  ASSERT_EQ(range->kvs.size(), 1u);
  EXPECT_EQ(range->kvs[0].key, prefix_ + "b");
}

TEST_F(EtcdClientTest, LeaseKeepsAndRevokeDeletesItsKeys) {
  Result<EtcdLease> lease = client_->LeaseGrant(30);
  ASSERT_TRUE(lease.ok()) << lease.status();
  EXPECT_EQ(lease->ttl_seconds, 30);
  ASSERT_TRUE(client_->Put(prefix_ + "k", "v", lease->id).ok());
  Result<EtcdRange> range = client_->Range(prefix_);
  ASSERT_TRUE(range.ok() && range->kvs.size() == 1) << range.status();
  EXPECT_EQ(range->kvs[0].lease, lease->id);
  Result<int64_t> ttl = client_->LeaseKeepAlive(lease->id);
  ASSERT_TRUE(ttl.ok()) << ttl.status();
  EXPECT_EQ(*ttl, 30);
  ASSERT_TRUE(client_->LeaseRevoke(lease->id).ok());
  range = client_->Range(prefix_);
  ASSERT_TRUE(range.ok()) << range.status();
  EXPECT_TRUE(range->kvs.empty());
  ttl = client_->LeaseKeepAlive(lease->id);
  ASSERT_FALSE(ttl.ok());
  EXPECT_TRUE(ttl.status().IsNotFound()) << ttl.status();
}

TEST_F(EtcdClientTest, RefusalNamesEndpointHttpStatusAndEtcdMessage) {
  Result<int64_t> put = client_->Put(prefix_ + "k", "v", /*lease=*/987654321);
  ASSERT_FALSE(put.ok());
  EXPECT_TRUE(put.status().IsNotFound()) << put.status();
  const std::string& m = put.status().message();
  EXPECT_NE(m.find(etcd_->url()), std::string::npos) << m;
  EXPECT_NE(m.find("/v3/kv/put"), std::string::npos) << m;
  EXPECT_NE(m.find("HTTP 404"), std::string::npos) << m;
  EXPECT_NE(m.find("requested lease not found"), std::string::npos) << m;
  Result<std::string> bad = client_->Post("/v3/kv/range", "not json");
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(bad.status().IsInvalidArgument()) << bad.status();
  EXPECT_NE(bad.status().message().find("HTTP 400"), std::string::npos) << bad.status();
}

// Collects watch events for the tests; waits without fixed sleeps.
struct EventLog {
  Mutex mu;
  CondVar cv;
  std::vector<EtcdWatchEvent> events;
  bool WaitFor(size_t n) {
    MutexLock lock(&mu);
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (events.size() < n && cv.WaitUntil(&mu, end)) {
    }
    return events.size() >= n;
  }
  void Add(const std::vector<EtcdWatchEvent>& batch) {
    MutexLock lock(&mu);
    events.insert(events.end(), batch.begin(), batch.end());
    cv.SignalAll();
  }
};

TEST_F(EtcdClientTest, WatchStreamsPutsAndDeletesFromARevision) {
  Result<int64_t> before = client_->Put(prefix_ + "early", "1");
  ASSERT_TRUE(before.ok()) << before.status();
  EventLog log;
  Result<std::unique_ptr<EtcdWatch>> watch = client_->Watch(
      prefix_, *before, [&log](const std::vector<EtcdWatchEvent>& b) { log.Add(b); },
      [](const Status&) {});
  ASSERT_TRUE(watch.ok()) << watch.status();
  ASSERT_TRUE(client_->Put(prefix_ + "late", std::string(40000, 'x')).ok());  // > one chunk
  ASSERT_TRUE(client_->Put(prefix_.substr(0, prefix_.size() - 1) + "z", "elsewhere").ok());
  ASSERT_TRUE(client_->Delete(prefix_ + "early").ok());
  ASSERT_TRUE(log.WaitFor(3));
  (*watch)->Stop();
  MutexLock lock(&log.mu);
  ASSERT_EQ(log.events.size(), 3u);
  EXPECT_EQ(log.events[0].type, EtcdWatchEvent::Type::kPut);
  EXPECT_EQ(log.events[0].kv.key, prefix_ + "early");
  EXPECT_EQ(log.events[0].kv.mod_revision, *before);
  EXPECT_EQ(log.events[1].kv.key, prefix_ + "late");
  EXPECT_EQ(log.events[1].kv.value, std::string(40000, 'x'));
  EXPECT_EQ(log.events[2].type, EtcdWatchEvent::Type::kDelete);
  EXPECT_EQ(log.events[2].kv.key, prefix_ + "early");
}

// A stopped etcd: every call fails as Unavailable naming the endpoint, and a watch that
// was running ends with such an error.
TEST(EtcdStoppedTest, ErrorsNameTheEndpoint) {
  EtcdProcess etcd;
  std::string why = etcd.Start();
  SY_REQUIRE_ETCD_OR_SKIP(why);
  auto client = EtcdClient::Create(etcd.url(), EtcdOptions{std::chrono::milliseconds(2000)});
  ASSERT_TRUE(client.ok()) << client.status();
  Mutex mu;
  CondVar cv;
  std::optional<Status> ended;
  Result<std::unique_ptr<EtcdWatch>> watch = (*client)->Watch(
      "/w/", 0, [](const std::vector<EtcdWatchEvent>&) {},
      [&](const Status& s) {
        MutexLock lock(&mu);
        ended = s;
        cv.SignalAll();
      });
  ASSERT_TRUE(watch.ok()) << watch.status();
  etcd.Kill();
  {
    MutexLock lock(&mu);
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!ended.has_value() && cv.WaitUntil(&mu, end)) {
    }
    ASSERT_TRUE(ended.has_value());
    EXPECT_TRUE(ended->IsUnavailable()) << *ended;
    EXPECT_NE(ended->message().find(etcd.url()), std::string::npos) << *ended;
  }
  Result<int64_t> put = (*client)->Put("/k", "v");
  ASSERT_FALSE(put.ok());
  EXPECT_TRUE(put.status().IsUnavailable()) << put.status();
  EXPECT_TRUE(put.status().IsRetryable());
  EXPECT_NE(put.status().message().find(etcd.url() + " /v3/kv/put"), std::string::npos)
      << put.status();
  for (const Status& s : {(*client)->Range("/").status(), (*client)->LeaseGrant(5).status(),
                          (*client)->Watch("/", 0, nullptr, nullptr).status()}) {
    EXPECT_TRUE(s.IsUnavailable()) << s;
    EXPECT_NE(s.message().find(etcd.url()), std::string::npos) << s;
  }
}

}  // namespace
}  // namespace switchyard::cluster
