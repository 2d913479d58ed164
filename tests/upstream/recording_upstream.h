// RecordingUpstream: a fake engine on loopback for the adapters' contract tests. It
// records every request (method, target, lower-case headers, body) in arrival order and
// answers each as the test set it up: by "METHOD /path?query" first, then "METHOD /path",
// else 404 (an engine without that endpoint). Answers of a route set to Hold() wait until
// Release() or ReleaseHeld(), so a test sees what is (not) sent while a call is in flight.
//
// Also: what vLLM, SGLang and llama-server answer to their probes and calls.
//
// Ownership: the test owns it; destroying it stops the server after answering what is held.
// Thread-safety: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "base/mutex.h"
#include "http/http_server.h"
#include "tests/common/wait_until.h"

namespace switchyard::upstream::testing {

class RecordingUpstream {
 public:
  struct Request {
    std::string method;
    std::string target;
    std::map<std::string, std::string> headers;
    std::string body;
    std::string route() const { return method + " " + target; }
    nlohmann::json json() const { return nlohmann::json::parse(body, nullptr, false); }
  };

  RecordingUpstream() {
    http::HttpServerOptions opts;
    opts.host = "127.0.0.1";
    opts.port = 0;
    server_ = std::make_unique<http::HttpServer>(
        opts, [this](const http::HttpRequest& req, http::HttpServer::Respond respond) {
          Handle(req, std::move(respond));
        });
    auto port = server_->Start();
    EXPECT_TRUE(port.ok()) << port.status().ToString();
    port_ = port.ok() ? *port : 0;
  }
  ~RecordingUpstream() {
    ReleaseHeld();
    server_->Stop();
  }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  // Answers `route` ("POST /slots/0?action=save" or "GET /props") with status and body.
  void Answer(const std::string& route, int status, std::string body) {
    MutexLock lock(&mu_);
    answers_[route] = {status, std::move(body)};
  }
  void Hold(const std::string& route) {
    MutexLock lock(&mu_);
    held_routes_[route] = true;
  }
  // Answers every held request, and answers later ones at once.
  void ReleaseHeld() { Release(""); }
  // The same for `route` only ("" for all).
  void Release(const std::string& route) {
    std::vector<std::function<void()>> answers;
    {
      MutexLock lock(&mu_);
      if (route.empty()) {
        held_routes_.clear();
      } else {
        held_routes_.erase(route);
      }
      for (auto it = held_.begin(); it != held_.end();) {
        if (route.empty() || it->routes.first == route || it->routes.second == route) {
          answers.push_back(std::move(it->answer));
          it = held_.erase(it);
        } else {
          ++it;
        }
      }
    }
    for (auto& answer : answers) answer();
  }

  std::vector<Request> requests() const {
    MutexLock lock(&mu_);
    return requests_;
  }
  // The requests whose route starts with `prefix` ("POST /slots", "GET ").
  std::vector<Request> requests(const std::string& prefix) const {
    std::vector<Request> out;
    for (Request& r : requests()) {
      if (r.route().rfind(prefix, 0) == 0) out.push_back(std::move(r));
    }
    return out;
  }
  // Waits until `n` requests with that prefix arrived (false on the hang guard).
  bool WaitFor(const std::string& prefix, size_t n) const {
    return switchyard::testing::WaitUntil([&] { return requests(prefix).size() >= n; });
  }
  size_t held() const {
    MutexLock lock(&mu_);
    return held_.size();
  }

 private:
  struct Held {
    std::pair<std::string, std::string> routes;  // with and without the query
    std::function<void()> answer;
  };
  struct Answered {
    int status = 404;
    std::string body = R"({"error":{"message":"not found"}})";
  };

  void Handle(const http::HttpRequest& req, http::HttpServer::Respond respond) {
    Request r{req.method, req.target, req.headers, req.body};
    const std::string path = req.method + " " + std::string(req.path());
    std::function<void()> answer;
    bool hold = false;
    {
      MutexLock lock(&mu_);
      requests_.push_back(r);
      Answered a;
      if (auto it = answers_.find(r.route()); it != answers_.end()) {
        a = it->second;
      } else if (auto it2 = answers_.find(path); it2 != answers_.end()) {
        a = it2->second;
      }
      answer = [a, respond = std::move(respond)] {
        http::HttpResponse resp;
        resp.status = a.status;
        resp.body = a.body;
        respond(std::move(resp));
      };
      hold = held_routes_.count(r.route()) > 0 || held_routes_.count(path) > 0;
      if (hold) held_.push_back(Held{{r.route(), path}, answer});
    }
    if (!hold) answer();
  }

  std::unique_ptr<http::HttpServer> server_;
  uint16_t port_ = 0;
  mutable Mutex mu_;
  std::vector<Request> requests_ GUARDED_BY(mu_);
  std::map<std::string, Answered> answers_ GUARDED_BY(mu_);
  std::map<std::string, bool> held_routes_ GUARDED_BY(mu_);
  std::vector<Held> held_ GUARDED_BY(mu_);
};

// What the engines answer.
inline std::string VllmMetrics(bool prefix_caching, const std::string& offloading_size) {
  return "# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig\n"
         "# TYPE vllm:cache_config_info gauge\n"
         "vllm:cache_config_info{block_size=\"16\",cache_dtype=\"auto\",enable_prefix_caching=\"" +
         std::string(prefix_caching ? "True" : "False") +
         "\",kv_offloading_backend=\"native\",kv_offloading_size=\"" + offloading_size +
         "\",engine=\"0\"} 1.0\n"
         "vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 0.0\n";
}
inline std::string SglangServerInfo(bool radix, bool priority, bool low_first, bool sessions) {
  nlohmann::json info = {{"model_path", "m"},
                         {"disable_radix_cache", !radix},
                         {"enable_priority_scheduling", priority},
                         {"schedule_low_priority_values_first", low_first},
                         {"enable_session_radix_cache", sessions},
                         {"version", "0.5.0"}};
  return info.dump();
}
inline std::string LlamaProps(int total_slots) {
  return nlohmann::json{{"total_slots", total_slots}, {"endpoint_slots", true}, {"model_path", "m"}}
      .dump();
}
// An OpenAI chat answer whose usage says `prompt_tokens`.
inline std::string ChatAnswer(int prompt_tokens) {
  return nlohmann::json{
      {"id", "c1"},
      {"object", "chat.completion"},
      {"choices", {{{"index", 0}, {"message", {{"role", "assistant"}, {"content", "x"}}}}}},
      {"usage", {{"prompt_tokens", prompt_tokens}, {"completion_tokens", 1}}}}
      .dump();
}

// A vLLM /metrics body (Prometheus text) with the load gauges proxy mode reads: requests
// running and waiting, and the KV cache's share in use.
inline std::string VllmGauges(double running, double waiting, double kv_usage) {
  auto line = [](const char* name, double v) {
    return std::string(name) + "{engine=\"0\",model_name=\"m\"} " + std::to_string(v) + "\n";
  };
  return "# TYPE vllm:num_requests_running gauge\n" + line("vllm:num_requests_running", running) +
         line("vllm:num_requests_waiting", waiting) + line("vllm:kv_cache_usage_perc", kv_usage);
}

}  // namespace switchyard::upstream::testing
