// workers: the failure sequence with real processes, timed. An in-process service whose
// scheduler has two `switchyard worker --join` processes (the binary beside this one, on
// loopback) runs workflows with long decodes; while LLM nodes run on both, one worker is
// SIGKILLed. Measured from the kill: until serve marks it lost (its control connection
// closed), and until every LLM node that ran on it has been placed again on the other
// worker (recomputing its context there). Median of three trials; no baseline (ratio
// null): the figure is a property of this system (detection + the core's reaction).
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "base/logging.h"
#include "bench/common/process.h"
#include "bench/common/report.h"
#include "serve/serve_join.h"
#include "service/service.h"

namespace switchyard::bench {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kWorkflows = 8;

pid_t SpawnWorker(const std::string& bin, const std::string& id, const std::string& address,
                  const std::string& log) {
  return Spawn({bin, "worker", "--join", address, "--engine", "simulated", "--id", id,
                "--log-level", "warn"},
               log);
}

v1::Workflow LongDecode(const std::string& id) {
  v1::Workflow w;
  w.set_id(id);
  v1::ProgramNode* n = w.add_nodes();
  n->set_id("gen");
  n->set_kind(v1::LLM);
  v1::CacheRef* r = n->add_cache_refs();
  r->set_context("main");
  r->set_mode(v1::CacheRef::CREATE);
  n->mutable_hints()->set_prompt_tokens(2000);
  n->mutable_hints()->set_extend_tokens(2000);
  n->mutable_hints()->set_max_output_tokens(4000);  // tens of seconds of decode
  return w;
}

// The worker of each running LLM node's latest placement (node key "wf/node").
std::map<std::string, int> Placements(service::Service& svc, const std::vector<std::string>& ids) {
  std::map<std::string, int> out;
  for (const std::string& id : ids) {
    auto s = svc.Get("bench", id);
    if (!s.ok()) continue;
    for (const auto& d : s->decisions())
      if (d.kind() == "place") out[id + "/" + d.node_id()] = d.worker();
    for (const auto& n : s->nodes())
      if (n.state() != v1::NODE_RUNNING) out.erase(id + "/" + n.id());
  }
  return out;
}

struct Trial {
  double lost_s = -1, rescheduled_s = -1;
  size_t affected = 0;
  std::string error;
};

// Submits and closes kWorkflows long decodes; their ids.
std::vector<std::string> SubmitLongDecodes(service::Service& svc) {
  std::vector<std::string> ids;
  for (int i = 0; i < kWorkflows; ++i) {
    ids.push_back("f" + std::to_string(i));
    (void)svc.Submit("bench", LongDecode(ids.back()));
    (void)svc.Close("bench", ids.back());
  }
  return ids;
}

// The placements once both workers run LLM nodes (the last seen after 15 s of polling).
std::map<std::string, int> AwaitBothBusy(service::Service& svc,
                                         const std::vector<std::string>& ids) {
  std::map<std::string, int> before;
  for (int i = 0; i < 3000; ++i) {
    before = Placements(svc, ids);
    std::set<int> busy;
    for (const auto& [k, w] : before) busy.insert(w);
    if (busy.size() == 2) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return before;
}

// SIGKILLs worker 1 (pids by worker id), then times until serve marks it lost and until
// every LLM node that ran on it (by `before`) is placed on another worker, 30 s at most.
void KillAndTime(workers::JoinServer& join, service::Service& svc,
                 const std::vector<std::string>& ids, const std::map<std::string, int>& before,
                 const std::map<std::string, pid_t>& pids, Trial* out) {
  const int victim = 1;  // the scheduler's index: the second worker to join
  const std::string victim_id = join.worker(victim)->hello().worker_id();
  std::set<std::string> affected;
  for (const auto& [k, w] : before)
    if (w == victim) affected.insert(k);
  out->affected = affected.size();
  auto t0 = Clock::now();
  ::kill(pids.at(victim_id), SIGKILL);
  auto deadline = t0 + std::chrono::seconds(30);
  while (Clock::now() < deadline && (out->lost_s < 0 || out->rescheduled_s < 0)) {
    double secs = std::chrono::duration<double>(Clock::now() - t0).count();
    if (out->lost_s < 0 && join.worker(victim)->lost()) out->lost_s = secs;
    if (out->rescheduled_s < 0 && out->lost_s >= 0) {
      std::map<std::string, int> now = Placements(svc, ids);
      bool all = true;
      for (const std::string& k : affected) {
        auto it = now.find(k);
        all = all && it != now.end() && it->second != victim;
      }
      if (all) out->rescheduled_s = secs;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (affected.empty()) out->error = "no LLM node ran on the victim";
}

Trial RunTrial(int t) {
  Trial out;
  std::string dir = std::filesystem::temp_directory_path().string() + "/sy_failover_" +
                    std::to_string(::getpid()) + "_" + std::to_string(t);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string bin = SwitchyardBeside();
  std::map<std::string, pid_t> pids;  // by worker id
  service::ServiceOptions so;
  so.data_dir = dir + "/data";
  so.sync_writes = false;
  so.scheduler.kv_bytes_scale = 256;
  serve::ServeJoinOptions jo;
  jo.local_workers = 0;
  jo.remote_workers = 2;
  jo.join_timeout = Seconds(60);
  jo.listening = [&](const std::string& address) {
    for (int i = 0; i < 2; ++i) {
      std::string id = "w" + std::to_string(i);
      pids[id] = SpawnWorker(bin, id, address, dir + "/" + id + ".log");
    }
  };
  {
    auto join = serve::JoinRemoteWorkers(jo, &so.scheduler);
    if (!join.ok()) {
      out.error = join.status().ToString() + " (binary " + bin + ")";
    } else {
      auto svc = service::Service::Open(so, RealClock::Default());
      if (!svc.ok()) {
        out.error = svc.status().ToString();
      } else {
        serve::Attach(join->get(), (*svc)->scheduler());
        std::vector<std::string> ids = SubmitLongDecodes(**svc);
        // Wait until both workers run LLM nodes, then kill worker 1.
        std::map<std::string, int> before = AwaitBothBusy(**svc, ids);
        KillAndTime(**join, **svc, ids, before, pids, &out);
        (*join)->SetLossHandler({});
        svc->reset();
      }
      join->reset();
    }
  }
  for (const auto& [id, p] : pids) Reap(p, 10);
  std::filesystem::remove_all(dir);
  return out;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void ReportFailover(const std::map<std::string, Measured>&, Report* report) {
  LogOptions quiet;
  quiet.level = LogLevel::kError;
  InitLogging(quiet);
  std::vector<double> lost, resched;
  std::string spread;
  for (int t = 0; t < 3; ++t) {
    Trial r = RunTrial(t);
    if (!r.error.empty() || r.lost_s < 0 || r.rescheduled_s < 0) {
      std::fprintf(stderr, "failover trial %d: %s\n", t,
                   r.error.empty() ? "timed out after 30 s" : r.error.c_str());
      continue;
    }
    lost.push_back(r.lost_s);
    resched.push_back(r.rescheduled_s);
    char buf[96];
    std::snprintf(buf, sizeof(buf), "%s%.3f/%.3f s (%zu nodes)", spread.empty() ? "" : ", ",
                  r.lost_s, r.rescheduled_s, r.affected);
    spread += buf;
  }
  if (lost.empty()) return;
  report->Add({.name = "sigkill_to_worker_lost",
               .value = Median(lost),
               .unit = "s",
               .higher_is_better = false,
               .note = "median of " + std::to_string(lost.size()) +
                       " trials; lost/rescheduled per trial: " + spread});
  report->Add({.name = "sigkill_to_every_affected_node_rescheduled",
               .value = Median(resched),
               .unit = "s",
               .higher_is_better = false,
               .note = "every LLM node running on the killed worker placed on the other one"});
}

}  // namespace
}  // namespace switchyard::bench

SY_BENCH_REPORT(failover, switchyard::bench::ReportFailover);
