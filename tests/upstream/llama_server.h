// LlamaServer: a real llama-server (llama.cpp) on loopback for the llama.cpp adapter's
// tests against the engine itself. The binary is $SY_LLAMA_SERVER (nothing else is looked
// up: CI has none, and the tests skip saying so). Start() writes a random-weight GGUF with
// scripts/make_random_gguf.py (python3) into a temporary directory, then runs the server on
// a free loopback port as the llama.cpp adapter wants it (upstream/llamacpp_adapter.cc:
// `-np 2 --kv-unified --no-cache-idle-slots --slot-save-path <dir>/slots/`) and waits
// until GET /health answers 200. The process is killed (SIGKILL) and the directory removed by
// the destructor.
//
// Call() sends one request through an UpstreamClient of its own and waits for the answer.
//
// Thread-safety: one owner thread.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/common/child_process.h"
#include "tests/common/wait_until.h"
#include "upstream/upstream_client.h"

namespace switchyard::upstream::testing {

// $SY_LLAMA_SERVER; "" when unset.
inline std::string LlamaServerBinary() {
  const char* env = std::getenv("SY_LLAMA_SERVER");
  return env == nullptr ? "" : env;
}

// $SY_LLAMA_GGUF_ARGS: more arguments of make_random_gguf.py, split at spaces (another
// shape, for a manual measurement); "" when unset.
inline std::string GgufArgs() {
  const char* env = std::getenv("SY_LLAMA_GGUF_ARGS");
  return env == nullptr ? "" : env;
}

// An answer: the status (0 when none came) and the body parsed as JSON (null when not).
struct LlamaAnswer {
  int status = 0;
  nlohmann::json body;
};

class LlamaServer {
 public:
  LlamaServer() = default;
  LlamaServer(const LlamaServer&) = delete;
  LlamaServer& operator=(const LlamaServer&) = delete;
  ~LlamaServer() {
    Kill();
    client_.reset();
    std::error_code ignored;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ignored);
  }

  // "" once the server answers /health; else what went wrong (with its log's tail).
  std::string Start(const std::string& binary) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "sy-llama-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) return "mkdtemp failed";
    dir_ = tmpl;
    std::filesystem::create_directory(slot_dir());
    const std::string model = dir_ + "/model.gguf";
    const std::string script = std::string(SY_SOURCE_DIR) + "/scripts/make_random_gguf.py";
    std::vector<std::string> args = {"python3", script, model};
    std::istringstream extra(GgufArgs());
    for (std::string arg; extra >> arg;) args.push_back(arg);
    if (Run(args, dir_ + "/gguf.log", 300) != 0) {
      return "scripts/make_random_gguf.py failed: " + Tail(dir_ + "/gguf.log");
    }
    std::string last;
    for (int attempt = 0; attempt < 3; ++attempt) {  // another process may take the port
      last = TryStart(binary, model);
      if (last.empty()) return "";
      Kill();
    }
    return last;
  }

  std::string slot_dir() const { return dir_ + "/slots/"; }
  std::string log() const { return Tail(dir_ + "/server.log"); }
  UpstreamClient* client() { return client_.get(); }

  LlamaAnswer Call(const std::string& method, const std::string& target,
                   const nlohmann::json& body = nullptr) {
    http::HttpRequest req;
    req.method = method;
    req.target = target;
    if (!body.is_null()) {
      req.body = body.dump();
      req.headers["content-type"] = "application/json";
    }
    auto answer = std::make_shared<std::promise<http::HttpResponse>>();
    auto future = answer->get_future();
    client_->Forward(req, 0, "", [answer](http::HttpResponse r) { answer->set_value(r); });
    if (future.wait_for(std::chrono::duration<double>(switchyard::testing::kWaitSeconds)) !=
        std::future_status::ready) {
      return {};
    }
    http::HttpResponse r = future.get();
    return {r.status, nlohmann::json::parse(r.body, nullptr, /*allow_exceptions=*/false)};
  }

 private:
  std::string TryStart(const std::string& binary, const std::string& model) {
    const int port = ::switchyard::testing::FreePort();
    if (port == 0) return "no free loopback port";
    UpstreamOptions opts;
    opts.urls = {"http://127.0.0.1:" + std::to_string(port)};
    opts.connect_timeout_ms = 1000;
    auto client = UpstreamClient::Create(opts);
    if (!client.ok()) return client.status().ToString();
    client_ = std::move(client).value();
    pid_ = ::switchyard::testing::Spawn(
        {binary, "-m", model, "--host", "127.0.0.1", "--port", std::to_string(port), "-np", "2",
         "--kv-unified", "--no-cache-idle-slots", "-c", "8192", "-t", "2", "--slot-save-path",
         slot_dir()},
        dir_ + "/server.log");
    int status = 0;
    bool exited = false;
    const bool up = switchyard::testing::WaitUntil(
        [&] {
          if (::waitpid(pid_, &status, WNOHANG) == pid_) exited = true;
          return exited || Call("GET", "/health").status == 200;
        },
        120, std::chrono::milliseconds(50));
    if (exited) pid_ = -1;
    if (up && !exited) return "";
    return std::string(exited ? "llama-server exited" : "no /health 200 in 120 s") + ": " + log();
  }

  void Kill() {
    ::switchyard::testing::Kill(pid_);
    pid_ = -1;
  }

  // Runs `args` to its end (killed after `seconds`); its exit code, -1 when killed.
  static int Run(const std::vector<std::string>& args, const std::string& log, double seconds) {
    const int status =
        ::switchyard::testing::Reap(::switchyard::testing::Spawn(args, log), seconds);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  static std::string Tail(const std::string& path) { return ::switchyard::testing::Tail(path); }

  std::string dir_;
  pid_t pid_ = -1;
  std::unique_ptr<UpstreamClient> client_;
};

}  // namespace switchyard::upstream::testing
