// kv_device.h without CUDA: device memory cannot be registered in this build.
#include "executors/internal/kv_device.h"

namespace switchyard::executors::internal {

Status CheckCudaDevice(int device, const std::string& what) {
  return Status::InvalidArgument(what + ": device 'cuda:" + std::to_string(device) +
                                 "' needs a CUDA build of Switchyard (SWITCHYARD_WITH_CUDA=ON); "
                                 "this build takes only 'cpu' memory");
}

Status CopyFromCuda(void*, const void*, uint64_t, int device) {
  return CheckCudaDevice(device, "copy from device memory");
}

Status CopyToCuda(void*, const void*, uint64_t, int device) {
  return CheckCudaDevice(device, "copy to device memory");
}

}  // namespace switchyard::executors::internal
