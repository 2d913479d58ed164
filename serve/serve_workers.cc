// serve_workers.h: `switchyard serve --local-workers/--remote-workers/--control-listen`.
#include "serve/serve_workers.h"

#include <cstdio>
#include <cstdlib>

namespace switchyard::serve {
namespace {

bool WholeNumber(const std::string& t, long long min, long long* out) {
  char* end = nullptr;
  long long n = std::strtoll(t.c_str(), &end, 10);
  if (t.empty() || *end != '\0' || n < min) return false;
  *out = n;
  return true;
}

}  // namespace

int TakeServeWorkerFlags(std::vector<std::string>* args, ServeWorkerFlags* out) {
  out->join.listen = "127.0.0.1:8471";
  std::vector<std::string> rest;
  for (size_t i = 0; i < args->size(); ++i) {
    const std::string& a = (*args)[i];
    bool ours = a == "--local-workers" || a == "--remote-workers" || a == "--spare-workers" ||
                a == "--control-listen" || a == "--join-timeout-s" || a == "--heartbeat-ms" ||
                a == "--etcd" || a == "--cluster";
    if (!ours) {
      rest.push_back(a);
      continue;
    }
    if (i + 1 >= args->size()) {
      std::fprintf(stderr, "switchyard serve: %s needs a value\n", a.c_str());
      return 2;
    }
    const std::string& v = (*args)[++i];
    long long n = 0;
    if (a == "--control-listen" || a == "--etcd" || a == "--cluster") {
      (a == "--control-listen" ? out->join.listen
       : a == "--etcd"         ? out->join.etcd_url
                               : out->join.cluster) = v;
      continue;
    }
    if (!WholeNumber(v, a == "--join-timeout-s" || a == "--heartbeat-ms" ? 1 : 0, &n)) {
      std::fprintf(stderr, "switchyard serve: %s needs a whole number, got '%s'\n", a.c_str(),
                   v.c_str());
      return 2;
    }
    if (a == "--local-workers") {
      out->join.local_workers = static_cast<int>(n);
      out->local_set = true;
    } else if (a == "--remote-workers") {
      out->join.remote_workers = static_cast<int>(n);
    } else if (a == "--spare-workers") {
      out->join.spare_workers = static_cast<int>(n);
    } else if (a == "--join-timeout-s") {
      out->join.join_timeout = Seconds(static_cast<double>(n));
    } else {
      out->join.heartbeat = Millis(n);
    }
  }
  args->swap(rest);
  return -1;
}

Result<std::unique_ptr<workers::JoinServer>> SetUpServeWorkers(ServeWorkerFlags f,
                                                               driver::SchedulerConfig* config) {
  if (!f.local_set) f.join.local_workers = config->workers;
  if (f.join.remote_workers == 0 && f.join.spare_workers > 0)
    return Status::InvalidArgument("--spare-workers needs --remote-workers N (N >= 1)");
  if (f.join.remote_workers == 0) {
    if (f.join.local_workers < 1)
      return Status::InvalidArgument("--local-workers 0 needs --remote-workers N (N >= 1)");
    config->workers = f.join.local_workers;
    return std::unique_ptr<workers::JoinServer>();
  }
  f.join.listening = [n = f.join.remote_workers](const std::string& address) {
    std::printf("control listening on %s, waiting for %d worker(s)\n", address.c_str(), n);
    std::fflush(stdout);
  };
  return JoinRemoteWorkers(f.join, config);
}

WorkersAttached::WorkersAttached(workers::JoinServer* join, driver::SchedulerDriver* driver)
    : join_(join) {
  if (join_ && driver) Attach(join_, driver);
}

WorkersAttached::~WorkersAttached() {
  if (join_) join_->Detach();  // the service is still alive: nothing calls into it after
}

}  // namespace switchyard::serve
