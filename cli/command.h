// The `switchyard` command line: one binary, subcommands registered by name.
//
// Each subcommand lives in its own cli/cmd_<name>.cc and registers itself with
// SY_REGISTER_COMMAND; main() dispatches on argv[1]. A command returns a process exit
// code (0 success, 1 runtime failure, 2 usage error) and prints errors to stderr.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace switchyard::cli {

struct Command {
  std::string name;
  std::string summary;  // one line for `switchyard help`
  std::function<int(const std::vector<std::string>& args)> run;
};

// All registered commands, ordered by name.
std::map<std::string, Command>& Commands();

struct Registrar {
  explicit Registrar(Command c);
};

}  // namespace switchyard::cli

#define SY_REGISTER_COMMAND(ident, name, summary, fn) \
  static ::switchyard::cli::Registrar sy_cmd_##ident({name, summary, fn})
