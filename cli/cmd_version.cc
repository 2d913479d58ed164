// `switchyard version`: build information.
#include <cstdio>

#include "cli/command.h"

namespace {

int RunVersion(const std::vector<std::string>&) {
#ifdef SWITCHYARD_HAVE_CUDA
  const char* cuda = "on";
#else
  const char* cuda = "off";
#endif
  std::printf("switchyard %s (cuda build: %s)\n", SWITCHYARD_VERSION, cuda);
  return 0;
}

}  // namespace

SY_REGISTER_COMMAND(version, "version", "print version and build options", RunVersion);
