// CUDA device probing for the CUDA tiers and mover (compiled only in CUDA builds).
//
// ProbeCudaDevice() is OK when cudaGetDeviceCount() reports at least one device, and
// Unavailable("no CUDA device: cudaGetDeviceCount returned 0") otherwise (or with the
// runtime's error string when the call itself fails: no driver, no device node).
//
// Thread-safety: thread-safe; the result is computed once per process.
#pragma once

#include "base/status.h"

namespace switchyard::kv_tiers {

Status ProbeCudaDevice();

}  // namespace switchyard::kv_tiers
