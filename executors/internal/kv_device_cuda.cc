// kv_device.h in a CUDA build: the CUDA runtime's device count and synchronous copies.
#include <cuda_runtime_api.h>

#include "executors/internal/kv_device.h"

namespace switchyard::executors::internal {
namespace {

Status CudaError(cudaError_t e, const std::string& what) {
  return Status::Internal(what + ": " + cudaGetErrorString(e));
}

}  // namespace

Status CheckCudaDevice(int device, const std::string& what) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess)
    return Status::FailedPrecondition(what + ": device 'cuda:" + std::to_string(device) +
                                      "' does not answer (" + cudaGetErrorString(e) + ")");
  if (device < 0 || device >= count)
    return Status::FailedPrecondition(what + ": device 'cuda:" + std::to_string(device) +
                                      "' does not exist (" + std::to_string(count) +
                                      " CUDA devices)");
  return Status::OK();
}

Status CopyFromCuda(void* host, const void* dev, uint64_t bytes, int device) {
  if (cudaError_t e = cudaSetDevice(device); e != cudaSuccess) return CudaError(e, "cudaSetDevice");
  if (cudaError_t e = cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost); e != cudaSuccess)
    return CudaError(e, "cudaMemcpy device to host");
  return Status::OK();
}

Status CopyToCuda(void* dev, const void* host, uint64_t bytes, int device) {
  if (cudaError_t e = cudaSetDevice(device); e != cudaSuccess) return CudaError(e, "cudaSetDevice");
  if (cudaError_t e = cudaMemcpy(dev, host, bytes, cudaMemcpyHostToDevice); e != cudaSuccess)
    return CudaError(e, "cudaMemcpy host to device");
  return Status::OK();
}

}  // namespace switchyard::executors::internal
