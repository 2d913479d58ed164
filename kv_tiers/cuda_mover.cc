// The "cuda" mover, compiled only when SWITCHYARD_WITH_CUDA is ON: cudaMemcpyAsync on a
// per-worker stream between addressable tiers where at least one side is device memory
// (HBM <-> pinned host, HBM <-> HBM), completion observed through a CUDA event. It
// registers itself (preference above "local") and reports Unavailable without a device.
#include <cuda_runtime_api.h>

#include "kv_tiers/cuda_probe.h"
#include "kv_tiers/local_mover.h"
#include "kv_tiers/worker_pool.h"

extern "C" {
int sy_kv_tiers_cuda_mover_anchor = 0;
}

namespace switchyard::kv_tiers {
namespace {

Status MoverCudaError(cudaError_t e, const std::string& what) {
  return Status::Unavailable("cuda mover: " + what + ": " + cudaGetErrorString(e),
                             ErrorScope::kTransfer);
}

// One stream and event per worker thread, created on first use.
struct ThreadStream {
  cudaStream_t stream = nullptr;
  cudaEvent_t event = nullptr;
  ~ThreadStream() {
    if (event) (void)cudaEventDestroy(event);
    if (stream) (void)cudaStreamDestroy(stream);
  }
};

Status CopyOnStream(const MoveRequest& req, const MoveState& state, uint64_t chunk) {
  thread_local ThreadStream ts;
  if (ts.stream == nullptr) {
    if (auto e = cudaStreamCreateWithFlags(&ts.stream, cudaStreamNonBlocking); e != cudaSuccess) {
      return MoverCudaError(e, "cudaStreamCreate");
    }
    if (auto e = cudaEventCreateWithFlags(&ts.event, cudaEventDisableTiming); e != cudaSuccess) {
      return MoverCudaError(e, "cudaEventCreate");
    }
  }
  for (const auto& s : req.segments) {
    auto* src = static_cast<const char*>(req.src->Data(s.src));
    auto* dst = static_cast<char*>(req.dst->Data(s.dst));
    for (uint64_t off = 0; off < s.bytes; off += chunk) {
      if (state.cancel_requested()) {
        (void)cudaStreamSynchronize(ts.stream);  // nothing in flight touches the buffers
        return Status::Cancelled("cuda mover: move cancelled");
      }
      uint64_t n = std::min(chunk, s.bytes - off);
      if (auto e = cudaMemcpyAsync(dst + off, src + off, n, cudaMemcpyDefault, ts.stream);
          e != cudaSuccess) {
        (void)cudaStreamSynchronize(ts.stream);
        return MoverCudaError(e, "cudaMemcpyAsync");
      }
    }
  }
  if (auto e = cudaEventRecord(ts.event, ts.stream); e != cudaSuccess) {
    (void)cudaStreamSynchronize(ts.stream);
    return MoverCudaError(e, "cudaEventRecord");
  }
  if (auto e = cudaEventSynchronize(ts.event); e != cudaSuccess) {
    return MoverCudaError(e, "cudaEventSynchronize");
  }
  return Status::OK();
}

class CudaMover final : public Mover {
 public:
  explicit CudaMover(const MoverEnv& env)
      : env_(env), pool_(std::make_unique<WorkerPool>(env.worker_threads)) {}
  std::string name() const override { return "cuda"; }

  bool Supports(const Tier& src, const Tier& dst) const override {
    auto a = src.capabilities(), b = dst.capabilities();
    return a.addressable && b.addressable && !a.remote && !b.remote &&
           (a.device_memory || b.device_memory);
  }

  Result<MoveHandle> Submit(MoveRequest request, MoveCallback on_complete) override {
    SY_RETURN_IF_ERROR(ValidateMoveRequest(request, "cuda"));
    if (!Supports(*request.src, *request.dst)) {
      return Status::NotSupported("cuda mover: cannot copy " + request.src->name() + " -> " +
                                  request.dst->name());
    }
    auto state = std::make_shared<MoveState>();
    MoveHandle handle(state);
    EventLoop* loop = env_.loop;
    // Chunks of 8 MiB keep DMA efficient while letting a cancel stop a long move.
    const uint64_t chunk = std::max<uint64_t>(env_.chunk_bytes, 8ull << 20);
    pool_->Submit([state, loop, chunk, req = std::move(request), cb = std::move(on_complete)] {
      FinishMove(loop, state, cb, CopyOnStream(req, *state, chunk));
    });
    return handle;
  }

 private:
  MoverEnv env_;
  std::unique_ptr<WorkerPool> pool_;
};

MoverRegistrar cuda_mover({"cuda", 100, ProbeCudaDevice,
                           [](const MoverEnv& env) -> Result<std::unique_ptr<Mover>> {
                             return std::unique_ptr<Mover>(new CudaMover(env));
                           }});

}  // namespace
}  // namespace switchyard::kv_tiers
