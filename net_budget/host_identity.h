// Host identity and interfaces, for topology reports (a joined worker's hello, serve's
// own host): which machine a process runs on, and which network interface an address of
// this machine belongs to.
//
// HostIdentity: the hostname, and where the process runs in a network namespace other
// than the machine's first one (pid 1's: a container or `ip netns exec` shares the
// hostname but not the interfaces) "<hostname>/netns:<inode>", so that two such "hosts"
// on one machine are told apart as their interfaces are. Where pid 1's namespace cannot
// be read, the suffix is always there (the same for every process of that namespace).
//
// Thread-safety: stateless functions (they read /proc and the interface list).
#pragma once

#include <string>

namespace switchyard::net_budget {

std::string HostIdentity();

// The name of the interface that holds IPv4 address `ip` ("" when none does, or `ip` is
// not an IPv4 address).
std::string InterfaceOfAddress(const std::string& ip);

}  // namespace switchyard::net_budget
