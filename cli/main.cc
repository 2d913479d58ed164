#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "base/logging.h"
#include "cli/command.h"

namespace switchyard::cli {

std::map<std::string, Command>& Commands() {
  static std::map<std::string, Command> commands;
  return commands;
}

Registrar::Registrar(Command c) {
  std::string name = c.name;
  Commands().emplace(std::move(name), std::move(c));
}

namespace {

// Logging for every command: SWITCHYARD_LOG_FORMAT=text|json, SWITCHYARD_LOG_LEVEL=
// trace|debug|info|warn|error, SWITCHYARD_LOG_FILE=PATH (default stderr).
int InitLoggingFromEnv() {
  LogOptions o;
  if (const char* f = std::getenv("SWITCHYARD_LOG_FORMAT")) {
    std::string v = f;
    if (v == "json") {
      o.format = LogFormat::kJson;
    } else if (v != "text") {
      std::fprintf(stderr, "switchyard: SWITCHYARD_LOG_FORMAT must be text or json, not '%s'\n", f);
      return 2;
    }
  }
  if (const char* l = std::getenv("SWITCHYARD_LOG_LEVEL")) {
    if (!ParseLogLevel(l, &o.level)) {
      std::fprintf(stderr, "switchyard: unknown SWITCHYARD_LOG_LEVEL '%s'\n", l);
      return 2;
    }
  }
  if (const char* file = std::getenv("SWITCHYARD_LOG_FILE")) o.file = file;
  InitLogging(o);
  return 0;
}

int Help() {
  std::printf("usage: switchyard COMMAND [ARGS...]\n\ncommands:\n");
  for (const auto& [name, cmd] : Commands()) {
    std::printf("  %-12s %s\n", name.c_str(), cmd.summary.c_str());
  }
  std::printf(
      "\n`switchyard COMMAND --help` describes a command's options.\n"
      "Logs: SWITCHYARD_LOG_FORMAT=text|json, SWITCHYARD_LOG_LEVEL, SWITCHYARD_LOG_FILE.\n");
  return 0;
}

}  // namespace
}  // namespace switchyard::cli

int main(int argc, char** argv) {
  using switchyard::cli::Commands;
  if (argc < 2 || std::string(argv[1]) == "help" || std::string(argv[1]) == "--help" ||
      std::string(argv[1]) == "-h") {
    return switchyard::cli::Help();
  }
  auto it = Commands().find(argv[1]);
  if (it == Commands().end()) {
    std::fprintf(stderr, "switchyard: unknown command '%s' (see `switchyard help`)\n", argv[1]);
    return 2;
  }
  if (int rc = switchyard::cli::InitLoggingFromEnv(); rc != 0) return rc;
  std::vector<std::string> args(argv + 2, argv + argc);
  return it->second.run(args);
}
