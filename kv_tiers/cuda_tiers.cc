// CUDA tiers, compiled only when SWITCHYARD_WITH_CUDA is ON. They register themselves
// ("cuda-hbm" for kind "hbm", "pinned-host" for kind "host") with a preference above the
// host-memory implementations, and report Unavailable without a device, so the registry
// falls back to "emulated-hbm" / "host".
#include <cuda_runtime_api.h>

#include <string>

#include "kv_tiers/arena_tier.h"
#include "kv_tiers/cuda_probe.h"
#include "kv_tiers/tier_registry.h"

// Referenced with -Wl,-u by kv_tiers/CMakeLists.txt so the static registrars below are
// linked even though nothing calls into this file.
extern "C" {
int sy_kv_tiers_cuda_tiers_anchor = 0;
}

namespace switchyard::kv_tiers {
namespace {

Status TierCudaError(cudaError_t e, const std::string& what) {
  return Status::Unavailable(what + ": " + cudaGetErrorString(e), ErrorScope::kTier);
}

Status Copy(void* dst, const void* src, uint64_t bytes) {
  cudaError_t e = cudaMemcpy(dst, src, bytes, cudaMemcpyDefault);
  return e == cudaSuccess ? Status::OK() : TierCudaError(e, "cudaMemcpy");
}

ArenaBackend CudaHbmBackend(int device) {
  ArenaBackend b;
  b.name = "cuda-hbm";
  b.kind = v1::TIER_HBM;
  b.caps.addressable = true;
  b.caps.device_memory = true;
  b.alloc = [device](uint64_t bytes) -> Result<void*> {
    void* p = nullptr;
    if (cudaError_t e = cudaSetDevice(device); e != cudaSuccess) {
      return TierCudaError(e, "cudaSetDevice");
    }
    if (cudaError_t e = cudaMalloc(&p, bytes); e != cudaSuccess) {
      return TierCudaError(e, "cudaMalloc " + std::to_string(bytes) + " B");
    }
    return p;
  };
  b.release = [](void* p) { (void)cudaFree(p); };
  b.copy_in = Copy;
  b.copy_out = Copy;
  return b;
}

ArenaBackend PinnedHostBackend() {
  ArenaBackend b;
  b.name = "pinned-host";
  b.kind = v1::TIER_HOST;
  b.caps.addressable = true;
  b.caps.pinned = true;
  b.alloc = [](uint64_t bytes) -> Result<void*> {
    void* p = nullptr;
    if (cudaError_t e = cudaHostAlloc(&p, bytes, cudaHostAllocPortable); e != cudaSuccess) {
      return TierCudaError(e, "cudaHostAlloc " + std::to_string(bytes) + " B");
    }
    return p;
  };
  b.release = [](void* p) { (void)cudaFreeHost(p); };
  b.copy_in = Copy;
  b.copy_out = Copy;
  return b;
}

template <typename T>
Result<std::unique_ptr<Tier>> Upcast(Result<std::unique_ptr<T>> r) {
  if (!r.ok()) return r.status();
  return std::unique_ptr<Tier>(std::move(r).value());
}

TierRegistrar cuda_hbm({"hbm", "cuda-hbm", 100, ProbeCudaDevice, [](const TierOptions& o) {
                          return Upcast(ArenaTier::Create(o, CudaHbmBackend(o.device)));
                        }});
TierRegistrar pinned_host({"host", "pinned-host", 100, ProbeCudaDevice, [](const TierOptions& o) {
                             return Upcast(ArenaTier::Create(o, PinnedHostBackend()));
                           }});

}  // namespace

Status ProbeCudaDevice() {
  static const Status status = [] {
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0) {
      std::string detail = e == cudaSuccess ? "" : std::string(" (") + cudaGetErrorString(e) + ")";
      return Status::Unavailable("no CUDA device: cudaGetDeviceCount returned 0" + detail);
    }
    return Status::OK();
  }();
  return status;
}

}  // namespace switchyard::kv_tiers
