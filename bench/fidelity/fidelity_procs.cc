// Processes and files of bench_fidelity (fidelity.h).
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <thread>

#include <google/protobuf/struct.pb.h>
#include "bench/common/process.h"
#include "bench/fidelity/fidelity.h"

#include "proto/json.h"

namespace switchyard::bench::fidelity {

double EnvDouble(const char* name, double fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  double d = std::strtod(v, &end);
  return end && *end == '\0' ? d : fallback;
}

double Median(const std::vector<double>& v) {
  size_t n = v.size();
  if (n == 0) return 0;
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

::switchyard::Result<std::string> RunCommand(const std::string& command, const std::string& log) {
  std::ofstream(log, std::ios::app) << "$ " << command << "\n";
  std::string out;
  FILE* p = ::popen((command + " 2>>" + log).c_str(), "r");
  if (!p) return Status::Internal("cannot run: " + command);
  char buf[4096];
  while (std::fgets(buf, sizeof(buf), p)) out += buf;
  int rc = ::pclose(p);
  std::ofstream(log, std::ios::app) << out;
  if (rc != 0)
    return Status::Internal("'" + command + "' exited with status " +
                            std::to_string(WIFEXITED(rc) ? WEXITSTATUS(rc) : rc) + " (log: " + log +
                            ")");
  return out;
}

Status ServeProcess::Start(const std::string& binary, const std::vector<std::string>& args,
                           const std::string& dir) {
  port_ = FreeLoopbackPort();
  std::string listen = "127.0.0.1:" + std::to_string(port_);
  std::string data = dir + "/data", log = dir + "/serve.log";
  std::vector<std::string> argv = {binary, "serve"};
  argv.insert(argv.end(), args.begin(), args.end());
  for (const char* a : {"--listen", listen.c_str(), "--data-dir", data.c_str()}) argv.push_back(a);
  pid_ = Spawn(argv, log);
  for (int i = 0; i < 1200; ++i) {
    if (Healthy(port_)) {
      auto token = proto::ReadFile(data + "/tokens/default");
      if (!token.ok()) return token.status();
      token_ = *token;
      while (!token_.empty() && (token_.back() == '\n' || token_.back() == ' ')) token_.pop_back();
      return Status::OK();
    }
    if (Exited(pid_)) {
      pid_ = -1;
      return Status::Unavailable("switchyard serve exited at start; log in " + log);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return Status::Unavailable("switchyard serve did not answer /healthz in 60 s; log in " + log);
}

ServeProcess::~ServeProcess() {
  if (pid_ > 0) Terminate(pid_);
}

::switchyard::Result<RealRun> ReadRealRun(const std::string& path) {
  SY_ASSIGN_OR_RETURN(std::string text, proto::ReadFile(path));
  google::protobuf::Struct j;
  proto::JsonParseOptions po;
  po.source = path;
  SY_RETURN_IF_ERROR(proto::ParseJson(text, &j, po));
  RealRun r;
  auto numbers = [&](const char* key, std::map<std::string, double>* out) {
    auto it = j.fields().find(key);
    if (it == j.fields().end()) return;
    for (const auto& [k, v] : it->second.struct_value().fields())
      if (v.has_number_value()) (*out)[k] = v.number_value();
  };
  numbers("jct_s", &r.jct_s);
  numbers("decisions_by_kind", &r.decisions_by_kind);
  numbers("bytes_moved_by_tier", &r.bytes_moved_by_tier);
  auto list = [&](const char* key, std::vector<double>* out) {
    auto it = j.fields().find(key);
    if (it == j.fields().end()) return;
    for (const auto& v : it->second.list_value().values())
      if (v.has_number_value()) out->push_back(v.number_value());
    std::sort(out->begin(), out->end());
  };
  list("ttft_s", &r.ttft_s);
  list("started_to_first_token_s", &r.started_to_first_token_s);
  list("call_overhead_s", &r.call_overhead_s);
  list("tool_overhead_s", &r.tool_overhead_s);
  auto states = j.fields().find("states");
  if (states != j.fields().end())
    for (const auto& [k, v] : states->second.struct_value().fields())
      r.states[k] = v.string_value();
  auto wall = j.fields().find("wall_s");
  if (wall != j.fields().end()) r.wall_s = wall->second.number_value();
  return r;
}

}  // namespace switchyard::bench::fidelity
