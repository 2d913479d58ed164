// SetThreadName: names the calling thread for the operator's tools (top -H, ps -L, perf,
// gdb). Linux keeps at most 15 bytes; a longer name is cut to that. A no-op where the
// platform cannot name threads. Never fails the caller.
#pragma once

#include <string>
#include <string_view>

namespace switchyard {

void SetThreadName(std::string_view name);
// The calling thread's name as the kernel reports it ("" when unknown).
std::string CurrentThreadName();

}  // namespace switchyard
