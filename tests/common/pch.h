// The precompiled header of every test binary (tests/CMakeLists.txt, sy_test_pch): the
// heavy headers that nearly every test batch parses — the standard library, GoogleTest,
// nlohmann/json, protobuf with the project's generated messages, Boost.Asio's event loop.
// Compiled once per build and reused by each test binary; parsing these was about a third
// of a test batch's compile time. Only headers from outside the project's sources belong
// here (the generated messages excepted), so that editing a source does not rebuild it.
// Each test still includes what it uses: this header only speeds the build up.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include <google/protobuf/message.h>
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <nlohmann/json.hpp>

#include "proto/switchyard/v1/api.pb.h"
#include "proto/switchyard/v1/events.pb.h"
#include "proto/switchyard/v1/kv.pb.h"
#include "proto/switchyard/v1/model.pb.h"
#include "proto/switchyard/v1/service_state.pb.h"
#include "proto/switchyard/v1/topology.pb.h"
#include "proto/switchyard/v1/worker_control.pb.h"
#include "proto/switchyard/v1/workflow.pb.h"
