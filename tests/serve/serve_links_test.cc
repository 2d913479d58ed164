// `switchyard serve --links FILE`: a link file's measured figures reach the scheduler's
// topology and /v1/cluster says where every link's figures came from; a link the
// topology does not have and a malformed file are refused by name. And `switchyard
// calibrate --link NAME --links-out FILE` against a real `switchyard worker` writes a
// file that serve accepts.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include "http/http_server.h"
#include "proto/json.h"
#include "scheduler/link_file.h"
#include "serve/http_api.h"
#include "serve/serve_config.h"
#include "tests/http/http_test_client.h"

namespace switchyard::serve {
namespace {

constexpr char kLinksToken[] = "links-tenant-token-0123456789";

std::string Dir() {
  return ::testing::TempDir() + "/sy_links_" + std::to_string(::getpid()) + "_" +
         ::testing::UnitTest::GetInstance()->current_test_info()->name();
}

// A link file with pcie0 measured at 40 us + 1/3e9 s/B.
std::string WriteLinkFile(const std::string& dir, const std::string& link = "pcie0") {
  std::filesystem::create_directories(dir);
  std::string path = dir + "/links.json";
  std::ofstream(path) << R"({"links": [{"link": ")" << link
                      << R"(", "label": "ucx/tcp loopback", "transport": "ucx",
      "calibration": {"alphaS": 4e-05, "betaSPerByte": 3.3333333333333335e-10,
                      "transport": "ucx/tcp", "calibratedAtMs": "1700000000123"}}]})";
  return path;
}

// MakeServeSetup with `flags` over `config`, small emulated tiers under `dir`.
Result<ServeSetup> SmallSetup(const std::string& dir, const ServeFlags& flags,
                              const v1::ServiceConfig& config = {}) {
  SY_ASSIGN_OR_RETURN(ServeSetup s, MakeServeSetup(config, flags));
  s.service.data_dir = s.data_dir = dir + "/data";
  s.service.sync_writes = false;
  s.service.scheduler.hbm_bytes_per_worker = 1ULL << 30;
  s.service.scheduler.host_bytes = 4ULL << 30;
  s.service.scheduler.disk_bytes = 4ULL << 30;
  s.service.scheduler.kv_bytes_scale = 256;
  return s;
}

// GET /v1/cluster of a service opened with `setup`.
v1::ClusterState ClusterOf(const ServeSetup& setup) {
  v1::ClusterState c;
  auto svc = service::Service::Open(setup.service, RealClock::Default());
  EXPECT_TRUE(svc.ok()) << svc.status();
  if (!svc.ok()) return c;
  v1::ServiceConfig cfg;
  auto* t = cfg.add_tenants();
  t->set_name("t");
  t->set_token(kLinksToken);
  cfg.set_admin_token("links-admin-token-0123456789");
  HttpApi api(svc->get(), *service::Auth::Create(cfg, setup.data_dir), RealClock::Default());
  http::HttpServerOptions ho;
  ho.port = 0;
  http::HttpServer server(ho, [&api](const http::HttpRequest& r) { return api.Handle(r); });
  auto port = server.Start();
  EXPECT_TRUE(port.ok()) << port.status();
  if (!port.ok()) return c;
  auto r = testing::Request(*port, "GET", "/v1/cluster", "",
                            {{"Authorization", std::string("Bearer ") + kLinksToken}});
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_TRUE(proto::ParseJson(r.body, &c).ok()) << r.body;
  server.Stop();
  return c;
}

std::map<std::string, v1::LinkState> Links(const v1::ClusterState& c) {
  std::map<std::string, v1::LinkState> m;
  for (const auto& l : c.links()) m[l.name()] = l;
  return m;
}

TEST(ServeLinksTest, ClusterShowsTheCalibratedLinkAndWhereEveryFigureCameFrom) {
  std::string dir = Dir();
  std::filesystem::remove_all(dir);
  ServeFlags flags;
  flags.links = WriteLinkFile(dir);
  v1::ServiceConfig config;
  config.mutable_links()->set_disk_bytes_per_s(2e9);
  config.mutable_links()->set_disk_latency_us(80);
  auto setup = SmallSetup(dir, flags, config);
  ASSERT_TRUE(setup.ok()) << setup.status();
  auto links = Links(ClusterOf(*setup));
  ASSERT_TRUE(links.count("pcie0") && links.count("disk0"));
  EXPECT_DOUBLE_EQ(links["pcie0"].bandwidth_bytes_per_s(), 3e9);
  EXPECT_NEAR(links["pcie0"].alpha_s(), 40e-6, 1e-12);
  EXPECT_EQ(links["pcie0"].figure_source(), "calibrated (ucx/tcp loopback, 2023-11-14T22:13:20Z)");
  EXPECT_DOUBLE_EQ(links["disk0"].bandwidth_bytes_per_s(), 2e9);
  EXPECT_EQ(links["disk0"].figure_source(),
            "configured (links.diskBytesPerS, links.diskLatencyUs)");
  std::filesystem::remove_all(dir);
}

// Without a link file or configured figures, the worker links take the bandwidths of the
// served model's GPU spec (the embedded H100 here; the rule replay applies to a cluster
// file), their latencies and the disk the documented defaults; each link says which.
TEST(ServeLinksTest, WithoutALinkFileLinksSayTheirFiguresAreTheGpuSpecsOrTheDefaults) {
  std::string dir = Dir();
  std::filesystem::remove_all(dir);
  auto setup = SmallSetup(dir, {});
  ASSERT_TRUE(setup.ok()) << setup.status();
  setup->service.scheduler.workers = 2;
  auto links = Links(ClusterOf(*setup));
  for (const char* n : {"pcie0", "pcie1", "nvlink0", "nvlink1", "disk0"})
    ASSERT_TRUE(links.count(n));
  for (const char* n : {"pcie0", "pcie1", "nvlink0", "nvlink1"})
    EXPECT_EQ(links[n].figure_source(),
              "bandwidth GPU spec (H100-SXM); latency default (ClusterShape, documented)")
        << n;
  EXPECT_EQ(links["disk0"].figure_source(), "default (ClusterShape, documented)");
  EXPECT_DOUBLE_EQ(links["pcie1"].bandwidth_bytes_per_s(), 5e10);
  EXPECT_DOUBLE_EQ(links["nvlink0"].bandwidth_bytes_per_s(), 9e11 / 2);
  EXPECT_DOUBLE_EQ(links["disk0"].bandwidth_bytes_per_s(),
                   scheduler::ClusterShape{}.disk_bytes_per_s);
  std::filesystem::remove_all(dir);
}

// The CPU engine's worker link (its pool <-> the host tier, a memcpy here) takes the CPU
// spec's figure, the one replay/clusters/cpu-tiny-llama-4l.json gives replay.
TEST(ServeLinksTest, TheCpuEnginesLinkTakesTheCpuSpecsFigure) {
  std::string dir = Dir();
  std::filesystem::remove_all(dir);
  ServeFlags flags;
  flags.engine = "cpu";
  flags.model = std::string(SY_SOURCE_DIR) + "/configs/models/tiny-llama-2l.json";
  flags.kv_pool_mib = 4;
  auto setup = SmallSetup(dir, flags);
  ASSERT_TRUE(setup.ok()) << setup.status();
  setup->service.scheduler.kv_bytes_scale = 1;
  auto links = Links(ClusterOf(*setup));
  ASSERT_TRUE(links.count("pcie0"));
  EXPECT_DOUBLE_EQ(links["pcie0"].bandwidth_bytes_per_s(), 5e9);
  EXPECT_EQ(links["pcie0"].figure_source().rfind("bandwidth GPU spec (cpu ", 0), 0u)
      << links["pcie0"].figure_source();
  std::filesystem::remove_all(dir);
}

TEST(ServeLinksTest, ALinkTheTopologyDoesNotHaveIsRefusedByName) {
  std::string dir = Dir();
  std::filesystem::remove_all(dir);
  ServeFlags flags;
  flags.links = WriteLinkFile(dir, "nic0");
  auto setup = SmallSetup(dir, flags);
  ASSERT_TRUE(setup.ok()) << setup.status();  // the file itself is well formed
  auto svc = service::Service::Open(setup->service, RealClock::Default());
  ASSERT_FALSE(svc.ok());
  EXPECT_NE(svc.status().message().find("link 'nic0' is not in the topology"), std::string::npos)
      << svc.status();
  EXPECT_NE(svc.status().message().find(flags.links), std::string::npos) << svc.status();
  std::filesystem::remove_all(dir);
}

// Runs `switchyard worker` on a free loopback port (UCX over TCP) and reads its address.
class Worker {
 public:
  bool Start() {
    int fds[2];
    if (pipe(fds) != 0) return false;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(fds[1], 1);
      close(fds[0]);
      setenv("UCX_TLS", "tcp", 1);
      setenv("UCX_LOG_LEVEL", "fatal", 1);
      std::string bin = Binary();
      execl(bin.c_str(), bin.c_str(), "worker", "--listen", "127.0.0.1:0", "--capacity", "64M",
            static_cast<char*>(nullptr));
      _exit(127);
    }
    close(fds[1]);
    out_ = fds[0];
    std::string line;
    char ch;
    while (line.find('\n') == std::string::npos) {
      pollfd p{out_, POLLIN, 0};
      if (poll(&p, 1, 20000) <= 0 || read(out_, &ch, 1) != 1) return false;
      line.push_back(ch);
    }
    const std::string prefix = "listening on ";
    if (line.rfind(prefix, 0) != 0) return false;
    address_ = line.substr(prefix.size(), line.find(' ', prefix.size()) - prefix.size());
    return true;
  }
  ~Worker() {
    if (pid_ > 0) kill(pid_, SIGKILL), waitpid(pid_, nullptr, 0);
    if (out_ >= 0) close(out_);
  }
  static std::string Binary() { return std::string(SY_BINARY_DIR) + "/bin/switchyard"; }
  const std::string& address() const { return address_; }

 private:
  pid_t pid_ = -1;
  int out_ = -1;
  std::string address_;
};

TEST(ServeLinksTest, CalibrateWritesALinkFileThatServeLoads) {
  ASSERT_EQ(access(Worker::Binary().c_str(), X_OK), 0)
      << "build the switchyard binary first: " << Worker::Binary();
  std::string dir = Dir();
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  Worker worker;
  ASSERT_TRUE(worker.Start());
  std::string links = dir + "/links.json";
  // Sizes from 256 KiB to 64 MiB: on a loaded machine a loopback message's latency swings by
  // milliseconds, which at 4 KiB-4 MiB made the medians not grow with size in 1 run of 7
  // (the fit then refuses them, rightly). Here the largest transfers (tens of ms) carry
  // the fit.
  std::string cmd = "UCX_TLS=tcp UCX_LOG_LEVEL=fatal " + Worker::Binary() + " calibrate --peer " +
                    worker.address() +
                    " --min 256K --max 64M --iters 5 --label loopback-test --link pcie0"
                    " --links-out " +
                    links + " > " + dir + "/calibrate.log 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << *proto::ReadFile(dir + "/calibrate.log");
  auto file = scheduler::LoadLinkFile(links);
  ASSERT_TRUE(file.ok()) << file.status();
  ASSERT_EQ(file->links_size(), 1);
  const v1::MeasuredLink& m = file->links(0);
  EXPECT_EQ(m.link(), "pcie0");
  EXPECT_EQ(m.label(), "loopback-test");
  EXPECT_EQ(m.peer(), worker.address());
  EXPECT_EQ(m.max_bytes(), 64u << 20);
  EXPECT_GT(m.calibration().per_size_size(), 1);
  EXPECT_GT(m.calibration().calibrated_at_ms(), 0);
  ServeFlags flags;
  flags.links = links;
  auto setup = SmallSetup(dir, flags);
  ASSERT_TRUE(setup.ok()) << setup.status();
  auto state = Links(ClusterOf(*setup));
  EXPECT_DOUBLE_EQ(state["pcie0"].bandwidth_bytes_per_s(), 1.0 / m.calibration().beta_s_per_byte());
  EXPECT_DOUBLE_EQ(state["pcie0"].alpha_s(), m.calibration().alpha_s());
  EXPECT_EQ(state["pcie0"].figure_source().rfind("calibrated (loopback-test, ", 0), 0u)
      << state["pcie0"].figure_source();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace switchyard::serve
