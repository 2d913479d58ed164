#include "base/thread_name.h"

#include <pthread.h>

namespace switchyard {

void SetThreadName(std::string_view name) {
#if defined(__linux__)
  char buf[16] = {};  // 15 bytes and the terminator: the kernel's limit
  name.copy(buf, sizeof(buf) - 1);
  pthread_setname_np(pthread_self(), buf);
#else
  (void)name;
#endif
}

std::string CurrentThreadName() {
#if defined(__linux__)
  char buf[16] = {};
  if (pthread_getname_np(pthread_self(), buf, sizeof(buf)) == 0) return buf;
#endif
  return "";
}

}  // namespace switchyard
