// SteeringFixture: recording upstreams (recording_upstream.h), an UpstreamClient to them
// and a Steering over it, with the steps of a session as proxy mode takes them: probe,
// then turns (BeforeTurn, Decorate, forward) between the scheduler's decisions.
//
// Every wait is on a condition (a promise, a recorded request) under the hang guard.
#pragma once

#include <chrono>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/common/wait_until.h"
#include "tests/upstream/recording_upstream.h"
#include "upstream/steering.h"
#include "upstream/upstream_client.h"

namespace switchyard::upstream::testing {

using nlohmann::json;

inline json ChatBody(const std::string& text) {
  return json{{"model", "m"}, {"messages", {{{"role", "user"}, {"content", text}}}}};
}

class SteeringFixture : public ::testing::Test {
 protected:
  // `n` recording upstreams, each answering chat completions with usage prompt_tokens=100.
  void AddUpstreams(size_t n) {
    for (size_t i = 0; i < n; ++i) {
      upstreams_.push_back(std::make_unique<RecordingUpstream>());
      upstreams_.back()->Answer("POST /v1/chat/completions", 200, ChatAnswer(100));
    }
  }
  RecordingUpstream& up(size_t i = 0) { return *upstreams_[i]; }

  // A client of the upstreams and a Steering with one setting each.
  void Steer(std::vector<SteeringUpstream> setups, SteeringOptions options = {}) {
    UpstreamOptions opts;
    for (auto& u : upstreams_) opts.urls.push_back(u->url());
    auto client = UpstreamClient::Create(opts);
    ASSERT_TRUE(client.ok()) << client.status().ToString();
    client_ = std::move(client).value();
    auto steering = Steering::Create(client_.get(), std::move(setups), options);
    ASSERT_TRUE(steering.ok()) << steering.status().ToString();
    steering_ = std::move(steering).value();
  }
  void Steer(UpstreamKind kind, Capabilities declared = {}, SteeringOptions options = {}) {
    SteeringUpstream setup;
    setup.kind = kind;
    setup.declared = std::move(declared);
    Steer(std::vector<SteeringUpstream>{setup}, options);
  }

  Capabilities Probe(size_t i = 0) {
    auto promise = std::make_shared<std::promise<Capabilities>>();
    auto future = promise->get_future();
    steering_->Probe(i, [promise](const Capabilities& caps) { promise->set_value(caps); });
    if (future.wait_for(Wait()) != std::future_status::ready) {
      ADD_FAILURE() << "no answer to the probes of upstream " << i;
      return {};
    }
    return future.get();
  }

  // A turn: waits for BeforeTurn's go, decorates, forwards; the upstream's status (0: no
  // answer, -1: BeforeTurn never said go).
  int Turn(const SessionRef& s, json body, int priority = 0,
           const std::string& path = "/v1/chat/completions") {
    auto go = std::make_shared<std::promise<void>>();
    auto went = go->get_future();
    steering_->BeforeTurn(s, [go] { go->set_value(); });
    if (went.wait_for(Wait()) != std::future_status::ready) return -1;
    return Forward(s, std::move(body), priority, path);
  }
  int Forward(const SessionRef& s, json body, int priority = 0,
              const std::string& path = "/v1/chat/completions") {
    http::HttpRequest req;
    req.method = "POST";
    req.target = path;
    steering_->Decorate(s, priority, &body, &req.headers);
    req.body = body.dump();
    req.headers["content-type"] = "application/json";
    auto answer = std::make_shared<std::promise<int>>();
    auto status = answer->get_future();
    client_->Forward(req, s.upstream, "",
                     [answer](http::HttpResponse r) { answer->set_value(r.status); });
    return status.wait_for(Wait()) == std::future_status::ready ? status.get() : 0;
  }

  // The last recorded request to `prefix` as JSON (null when none).
  json Last(const std::string& prefix, size_t i = 0) {
    auto seen = up(i).requests(prefix);
    return seen.empty() ? json() : seen.back().json();
  }
  // The routes recorded after the probes, in order.
  std::vector<std::string> Routes(size_t i = 0) {
    std::vector<std::string> routes;
    for (const auto& r : up(i).requests()) {
      if (r.method != "GET") routes.push_back(r.route());
    }
    return routes;
  }

  static std::chrono::duration<double> Wait() {
    return std::chrono::duration<double>(switchyard::testing::kWaitSeconds);
  }

  // Destroyed in this order: steering, client, upstreams.
  std::vector<std::unique_ptr<RecordingUpstream>> upstreams_;
  std::unique_ptr<UpstreamClient> client_;
  std::unique_ptr<Steering> steering_;
};

inline Capability Declared(bool on = true) { return Capability{on, "configured"}; }

}  // namespace switchyard::upstream::testing
