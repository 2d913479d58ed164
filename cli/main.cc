#include <cstdio>
#include <string>
#include <vector>

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

int Help() {
  std::printf("usage: switchyard COMMAND [ARGS...]\n\ncommands:\n");
  for (const auto& [name, cmd] : Commands()) {
    std::printf("  %-12s %s\n", name.c_str(), cmd.summary.c_str());
  }
  std::printf("\n`switchyard COMMAND --help` describes a command's options.\n");
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
  std::vector<std::string> args(argv + 2, argv + argc);
  return it->second.run(args);
}
