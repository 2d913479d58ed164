// Structured logging through spdlog, with the correlation keys of docs/design.md invariant 8.
//
// Every log line that concerns a workflow, node, request, transfer or epoch carries those
// keys as fields (LogKeys). Two output formats:
//   - text:  "2026-11-29T08:30:00.123Z info  transfer committed workflow_id=wf_1 ..."
//   - json:  one JSON object per line: {"ts":..,"level":..,"msg":..,"workflow_id":..}
// Never log tokens, prompts or other user content: log ids and sizes.
//
// Thread-safety: all functions are thread-safe (spdlog's mt sinks).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace switchyard {

enum class LogLevel { kTrace, kDebug, kInfo, kWarn, kError };
enum class LogFormat { kText, kJson };

struct LogOptions {
  LogFormat format = LogFormat::kText;
  LogLevel level = LogLevel::kInfo;
  std::string file;  // empty: stderr
};

// Correlation keys (invariant 8). Unset keys are omitted from the line.
struct LogKeys {
  std::string workflow_id;
  std::string node_id;
  std::string request_id;
  std::string transfer_id;
  std::optional<uint64_t> model_epoch;
  std::optional<uint64_t> communicator_epoch;
  // Other structured fields (sizes, tiers, reasons): key, value.
  std::vector<std::pair<std::string, std::string>> extra;

  LogKeys& With(std::string key, std::string value) {
    extra.emplace_back(std::move(key), std::move(value));
    return *this;
  }
};

// Installs the process-wide logger. Safe to call again to change the options.
void InitLogging(const LogOptions& options);
// Parses "trace|debug|info|warn|error"; unknown text gives kInfo and false.
bool ParseLogLevel(std::string_view text, LogLevel* out);

void Log(LogLevel level, std::string_view msg, const LogKeys& keys = {});
// Whether a line at `level` would be written (skip building costly keys when not).
bool LogEnabled(LogLevel level);
// Writes out what the sink buffered (a file sink flushes on its own only from warn up).
void FlushLogs();

// Renders one line in the given format without the timestamp (for tests and sinks).
std::string FormatLogLine(LogFormat format, LogLevel level, std::string_view msg,
                          const LogKeys& keys);

// Escapes a string for inclusion in a JSON string literal (without the quotes).
// Each byte that is not part of well-formed UTF-8 is replaced by U+FFFD: the result is
// always valid UTF-8 JSON text.
std::string JsonEscape(std::string_view s);

}  // namespace switchyard
