// HostIdentity and InterfaceOfAddress (host_identity.h).
#include "net_budget/host_identity.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <sys/stat.h>
#include <unistd.h>

namespace switchyard::net_budget {
namespace {

// The inode of a process's network namespace (0: unreadable).
ino_t NetnsInode(const char* path) {
  struct stat st {};
  return ::stat(path, &st) == 0 ? st.st_ino : 0;
}

}  // namespace

std::string HostIdentity() {
  char host[256] = {0};
  ::gethostname(host, sizeof(host) - 1);
  std::string id = host[0] ? host : "unknown-host";
  const ino_t mine = NetnsInode("/proc/self/ns/net");
  const ino_t first = NetnsInode("/proc/1/ns/net");
  // Unreadable pid-1 namespace (`ip netns exec` denies it): the process's own namespace
  // names the host, the same for every process in it.
  if (mine != 0 && mine != first) id += "/netns:" + std::to_string(mine);
  return id;
}

std::string InterfaceOfAddress(const std::string& ip) {
  in_addr want{};
  if (::inet_pton(AF_INET, ip.c_str(), &want) != 1) return "";
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return "";
  std::string name;
  for (ifaddrs* a = list; a != nullptr && name.empty(); a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET) continue;
    const auto* in = reinterpret_cast<const sockaddr_in*>(a->ifa_addr);
    if (in->sin_addr.s_addr == want.s_addr) name = a->ifa_name;
  }
  ::freeifaddrs(list);
  return name;
}

}  // namespace switchyard::net_budget
