// The "nccl" transport (transport/nccl_transport.cc): registered in CUDA builds
// only; its data tests need two CUDA devices (two ranks in this process, one per GPU:
// NCCL does not put two ranks of one communicator on the same GPU) and skip, saying so,
// without them.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>

#include "transport/transport.h"

#ifdef SWITCHYARD_WITH_NCCL_TRANSPORT
#include <cuda_runtime.h>
#endif

namespace switchyard::transport {
namespace {

TEST(NcclTransportTest, RegisteredExactlyInCudaBuilds) {
#ifdef SWITCHYARD_WITH_NCCL_TRANSPORT
  EXPECT_TRUE(TransportRegistry::Global().Has("nccl"));
#else
  EXPECT_FALSE(TransportRegistry::Global().Has("nccl"));
  GTEST_SKIP() << "not a CUDA build (SWITCHYARD_WITH_CUDA off): no nccl transport compiled in";
#endif
}

#ifdef SWITCHYARD_WITH_NCCL_TRANSPORT

// Skips the calling test unless `n` CUDA devices are visible.
#define REQUIRE_DEVICES(n)                                                             \
  do {                                                                                 \
    int count = 0;                                                                     \
    cudaError_t e = cudaGetDeviceCount(&count);                                        \
    if (e != cudaSuccess) {                                                            \
      GTEST_SKIP() << "needs " << (n) << " CUDA device(s): " << cudaGetErrorString(e); \
    }                                                                                  \
    if (count < (n)) {                                                                 \
      GTEST_SKIP() << "needs " << (n) << " CUDA device(s), found " << count;           \
    }                                                                                  \
  } while (0)

TransportConfig OnDevice(int d) {
  TransportConfig c;
  c.params["device"] = std::to_string(d);
  return c;
}

TEST(NcclTransportTest, WithoutADeviceCreationSaysWhy) {
  auto t = TransportRegistry::Global().Create("nccl", OnDevice(0));
  if (t.ok()) GTEST_SKIP() << "a CUDA device is present: covered by the data tests";
  EXPECT_TRUE(t.status().IsUnavailable()) << t.status();
  EXPECT_NE(t.status().message().find("no CUDA device"), std::string::npos) << t.status();
}

TEST(NcclTransportTest, CapabilitiesAndBadConfig) {
  REQUIRE_DEVICES(1);
  auto t = TransportRegistry::Global().Create("nccl", OnDevice(0));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ((*t)->name(), "nccl");
  EXPECT_EQ((*t)->supportedMemoryKinds(), std::vector<MemoryKind>{MemoryKind::kCuda});
  TransportConfig bad;
  bad.params["nonsense"] = "1";
  EXPECT_TRUE(TransportRegistry::Global().Create("nccl", bad).status().IsInvalidArgument());
  uint8_t host[8];
  EXPECT_TRUE((*t)->PostRecv({{host, 8}}, 1, ~Tag{0}, {}).status().IsNotSupported());
}

struct DeviceBytes {
  DeviceBytes(int device, size_t n) : device(device), n(n) {
    cudaSetDevice(device);
    cudaMalloc(&p, n);
  }
  ~DeviceBytes() {
    cudaSetDevice(device);
    cudaFree(p);
  }
  void Fill(uint8_t seed) {
    std::vector<uint8_t> h(n);
    for (size_t i = 0; i < n; ++i) h[i] = static_cast<uint8_t>(i * 7 + seed);
    cudaSetDevice(device);
    cudaMemcpy(p, h.data(), n, cudaMemcpyHostToDevice);
  }
  std::vector<uint8_t> Read() const {
    std::vector<uint8_t> h(n);
    cudaSetDevice(device);
    cudaMemcpy(h.data(), p, n, cudaMemcpyDeviceToHost);
    return h;
  }
  MemoryDescriptor Desc(size_t off, size_t len) const {
    return {static_cast<uint8_t*>(p) + off, len, MemoryKind::kCuda, device};
  }
  int device;
  size_t n;
  void* p = nullptr;
};

TEST(NcclTransportTest, TaggedMessagesBetweenTwoGpus) {
  REQUIRE_DEVICES(2);
  auto a = TransportRegistry::Global().Create("nccl", OnDevice(0));
  auto b = TransportRegistry::Global().Create("nccl", OnDevice(1));
  ASSERT_TRUE(a.ok() && b.ok());
  auto addr = (*a)->Listen("127.0.0.1:0");
  ASSERT_TRUE(addr.ok()) << addr.status();
  auto to_a = (*b)->Connect(*addr);
  ASSERT_TRUE(to_a.ok()) << to_a.status();

  const size_t n = 8 << 20;
  DeviceBytes src(1, n), dst(0, n), late(0, n), small(0, 1024);
  src.Fill(3);
  // Pre-posted receive, scattered into two pieces; the send gathered from three.
  auto r = (*a)->PostRecv({dst.Desc(0, n / 2), dst.Desc(n / 2, n - n / 2)}, 42, ~Tag{0}, {});
  ASSERT_TRUE(r.ok()) << r.status();
  auto s = (*b)->PostSend(
      *to_a, {src.Desc(0, 100), src.Desc(100, n / 3), src.Desc(100 + n / 3, n - 100 - n / 3)}, 42,
      {});
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_TRUE(s->wait().ok());
  ASSERT_TRUE(r->wait().ok());
  EXPECT_EQ(r->bytes(), n);
  EXPECT_EQ(r->sender_tag(), 42u);
  EXPECT_EQ(dst.Read(), src.Read());

  // Unexpected: sent before its receive is posted; tags matched under a mask.
  auto s2 = (*b)->PostSend(*to_a, {src.Desc(0, n)}, 0x0700, {});
  ASSERT_TRUE(s2.ok());
  ASSERT_TRUE(s2->wait().ok());
  auto r2 = (*a)->PostRecv({late.Desc(0, n)}, 0x0700, 0xff00, {});
  ASSERT_TRUE(r2.ok());
  ASSERT_TRUE(r2->wait().ok());
  EXPECT_EQ(r2->sender_tag(), 0x0700u);
  EXPECT_EQ(late.Read(), src.Read());

  // Truncation is an error, not silent loss.
  auto r3 = (*a)->PostRecv({small.Desc(0, 1024)}, 9, ~Tag{0}, {});
  auto s3 = (*b)->PostSend(*to_a, {src.Desc(0, 4096)}, 9, {});
  ASSERT_TRUE(r3.ok() && s3.ok());
  ASSERT_TRUE(s3->wait().ok());
  EXPECT_TRUE(r3->wait().IsInvalidArgument());

  // A receive nobody sends to is cancelled by dropping its handle.
  {
    auto idle = (*a)->PostRecv({small.Desc(0, 1024)}, 77, ~Tag{0}, {});
    ASSERT_TRUE(idle.ok());
    EXPECT_FALSE(idle->poll());
  }
  EXPECT_TRUE((*a)->PeerStatus(1).ok());
  EXPECT_TRUE((*b)->Disconnect(*to_a).ok());
}

#endif  // SWITCHYARD_WITH_NCCL_TRANSPORT

}  // namespace
}  // namespace switchyard::transport
