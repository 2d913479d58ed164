// Device memory access for RegisteredKvPool (registered_kv.h): whether a device is usable,
// and copies between host memory and it. Two builds of the same functions: kv_device_cuda.cc
// (SWITCHYARD_WITH_CUDA: the CUDA runtime) and kv_device_none.cc (refuses every device).
// Thread-safety: the functions are thread-safe (the CUDA runtime's rules).
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"

namespace switchyard::executors::internal {

// OK when CUDA device `device` answers; InvalidArgument naming `what` outside a CUDA build,
// FailedPrecondition when the device is absent.
Status CheckCudaDevice(int device, const std::string& what);
// Synchronous copies of `bytes` between host memory and device memory on `device`.
Status CopyFromCuda(void* host, const void* dev, uint64_t bytes, int device);
Status CopyToCuda(void* dev, const void* host, uint64_t bytes, int device);

}  // namespace switchyard::executors::internal
