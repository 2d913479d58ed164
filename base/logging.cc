#include "base/logging.h"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <cstdio>
#include <memory>

#include "base/mutex.h"
#include "base/utf8.h"

namespace switchyard {
namespace {

Mutex g_mu;
std::shared_ptr<spdlog::logger> g_logger GUARDED_BY(g_mu);
std::atomic<int> g_format{static_cast<int>(LogFormat::kText)};

spdlog::level::level_enum ToSpd(LogLevel l) {
  switch (l) {
    case LogLevel::kTrace:
      return spdlog::level::trace;
    case LogLevel::kDebug:
      return spdlog::level::debug;
    case LogLevel::kInfo:
      return spdlog::level::info;
    case LogLevel::kWarn:
      return spdlog::level::warn;
    case LogLevel::kError:
      return spdlog::level::err;
  }
  return spdlog::level::info;
}

std::string_view LevelName(LogLevel l) {
  switch (l) {
    case LogLevel::kTrace:
      return "trace";
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarn:
      return "warn";
    case LogLevel::kError:
      return "error";
  }
  return "info";
}

std::shared_ptr<spdlog::logger> Logger() {
  MutexLock lock(&g_mu);
  if (!g_logger) {
    g_logger = std::make_shared<spdlog::logger>("switchyard",
                                                std::make_shared<spdlog::sinks::stderr_sink_mt>());
    g_logger->set_pattern("%Y-%m-%dT%H:%M:%S.%eZ %v", spdlog::pattern_time_type::utc);
  }
  return g_logger;
}

template <typename F>
void ForEachField(const LogKeys& k, F&& f) {
  if (!k.workflow_id.empty()) f("workflow_id", k.workflow_id, true);
  if (!k.node_id.empty()) f("node_id", k.node_id, true);
  if (!k.request_id.empty()) f("request_id", k.request_id, true);
  if (!k.transfer_id.empty()) f("transfer_id", k.transfer_id, true);
  if (k.model_epoch) f("model_epoch", std::to_string(*k.model_epoch), false);
  if (k.communicator_epoch) {
    f("communicator_epoch", std::to_string(*k.communicator_epoch), false);
  }
  for (const auto& [key, value] : k.extra) f(key, value, true);
}

}  // namespace

std::string JsonEscape(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 8);
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      // Bytes that are not UTF-8 become U+FFFD (encoded), so the output is valid JSON whatever the
      // input (a client's malformed body quoted in an error, an id in a log line).
      size_t n = Utf8SequenceLength(s, i);
      if (n == 0) {
        out += "\xEF\xBF\xBD";  // U+FFFD
      } else {
        out.append(s.substr(i, n));
        i += n - 1;
      }
      continue;
    }
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out;
}

std::string FormatLogLine(LogFormat format, LogLevel level, std::string_view msg,
                          const LogKeys& keys) {
  std::string out;
  if (format == LogFormat::kJson) {
    out =
        "{\"level\":\"" + std::string(LevelName(level)) + "\",\"msg\":\"" + JsonEscape(msg) + "\"";
    ForEachField(keys, [&](std::string_view k, const std::string& v, bool quote) {
      out += ",\"" + JsonEscape(k) + "\":";
      out += quote ? "\"" + JsonEscape(v) + "\"" : v;
    });
    out += "}";
  } else {
    out = std::string(LevelName(level)) + " " + std::string(msg);
    ForEachField(keys, [&](std::string_view k, const std::string& v, bool) {
      out += " " + std::string(k) + "=" + v;
    });
  }
  return out;
}

void InitLogging(const LogOptions& options) {
  std::shared_ptr<spdlog::logger> logger;
  if (options.file.empty()) {
    logger = std::make_shared<spdlog::logger>("switchyard",
                                              std::make_shared<spdlog::sinks::stderr_sink_mt>());
  } else {
    logger = std::make_shared<spdlog::logger>(
        "switchyard", std::make_shared<spdlog::sinks::basic_file_sink_mt>(options.file));
  }
  if (options.format == LogFormat::kJson) {
    // The timestamp becomes the object's first field; FormatLogLine supplies the rest.
    logger->set_pattern("{\"ts\":\"%Y-%m-%dT%H:%M:%S.%fZ\",%v", spdlog::pattern_time_type::utc);
  } else {
    logger->set_pattern("%Y-%m-%dT%H:%M:%S.%eZ %v", spdlog::pattern_time_type::utc);
  }
  logger->set_level(ToSpd(options.level));
  logger->flush_on(spdlog::level::warn);
  g_format.store(static_cast<int>(options.format));
  MutexLock lock(&g_mu);
  g_logger = std::move(logger);
}

bool ParseLogLevel(std::string_view text, LogLevel* out) {
  static const std::pair<std::string_view, LogLevel> kLevels[] = {{"trace", LogLevel::kTrace},
                                                                  {"debug", LogLevel::kDebug},
                                                                  {"info", LogLevel::kInfo},
                                                                  {"warn", LogLevel::kWarn},
                                                                  {"error", LogLevel::kError}};
  for (const auto& [name, level] : kLevels) {
    if (text == name) {
      *out = level;
      return true;
    }
  }
  *out = LogLevel::kInfo;
  return false;
}

void Log(LogLevel level, std::string_view msg, const LogKeys& keys) {
  auto logger = Logger();
  if (!logger->should_log(ToSpd(level))) return;
  auto format = static_cast<LogFormat>(g_format.load());
  std::string line = FormatLogLine(format, level, msg, keys);
  if (format == LogFormat::kJson) line.erase(0, 1);  // the pattern opened the object
  logger->log(ToSpd(level), "{}", line);
}

bool LogEnabled(LogLevel level) { return Logger()->should_log(ToSpd(level)); }

void FlushLogs() { Logger()->flush(); }

}  // namespace switchyard
