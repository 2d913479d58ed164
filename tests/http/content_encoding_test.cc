// Compressed request bodies (http/content_encoding.h) through the real HttpServer on
// loopback: gzip, x-gzip, deflate, zstd and a list of codings reach the handler decoded,
// with the Content-Encoding header dropped; an unknown coding is a 415 naming it, a corrupt
// or truncated body a 400, and a body that would inflate past the body limit (a "bomb") a
// 413 naming the limit — none of these reach the handler. DecodeContentEncoding on its own
// for what a socket test cannot see: concatenated gzip members, and a zstd frame asking
// for a window larger than the limit allows.
#include "http/content_encoding.h"

#include <gtest/gtest.h>
#include <zlib.h>
#include <zstd.h>

#include <atomic>
#include <map>
#include <memory>
#include <string>

#include "base/mutex.h"
#include "http/http_server.h"
#include "tests/http/http_test_client.h"

namespace switchyard::http {
namespace {

constexpr size_t kLimit = 64 * 1024;

// zlib's deflate in the gzip (window_bits 16 + 15) or zlib (15) format.
std::string Deflate(const std::string& in, int window_bits) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, 6, Z_DEFLATED, window_bits, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&z, in.size()) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

std::string Gzip(const std::string& in) { return Deflate(in, 16 + MAX_WBITS); }

std::string Zstd(const std::string& in) {
  std::string out(ZSTD_compressBound(in.size()), '\0');
  size_t n = ZSTD_compress(out.data(), out.size(), in.data(), in.size(), 3);
  EXPECT_FALSE(ZSTD_isError(n));
  out.resize(n);
  return out;
}

// A live server whose handler records what it was handed.
class ContentEncodingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HttpServerOptions options;
    options.port = 0;
    options.body_limit_bytes = kLimit;
    server_ = std::make_unique<HttpServer>(options, [this](const HttpRequest& req) {
      MutexLock lock(&mu_);
      ++calls_;
      seen_ = req;
      return HttpResponse{200, "text/plain", {}, "ok"};
    });
    auto port = server_->Start();
    ASSERT_TRUE(port.ok());
    port_ = *port;
  }
  void TearDown() override { server_->Stop(); }

  testing::ClientResponse Post(const std::string& body, const std::string& encoding) {
    return testing::Request(port_, "POST", "/echo", body, {{"Content-Encoding", encoding}});
  }
  int calls() {
    MutexLock lock(&mu_);
    return calls_;
  }
  HttpRequest seen() {
    MutexLock lock(&mu_);
    return seen_;
  }

  std::unique_ptr<HttpServer> server_;
  uint16_t port_ = 0;
  Mutex mu_;
  int calls_ GUARDED_BY(mu_) = 0;
  HttpRequest seen_ GUARDED_BY(mu_);
};

const std::string kJson = R"({"model":"m","input":"hello, compressed world"})";

TEST_F(ContentEncodingTest, EachCodingReachesTheHandlerDecoded) {
  const std::map<std::string, std::string> cases = {
      {"gzip", Gzip(kJson)},
      {"x-gzip", Gzip(kJson)},
      {"deflate", Deflate(kJson, MAX_WBITS)},
      {"zstd", Zstd(kJson)},
      {"ZSTD", Zstd(kJson)},
      {"identity", kJson},
      {"gzip, zstd", Zstd(Gzip(kJson))},  // applied in this order: decoded in reverse
  };
  for (const auto& [encoding, body] : cases) {
    SCOPED_TRACE(encoding);
    auto r = Post(body, encoding);
    ASSERT_EQ(r.status, 200) << r.body;
    HttpRequest req = seen();
    EXPECT_EQ(req.body, kJson);
    EXPECT_EQ(req.Header("content-encoding"), "") << "dropped once decoded";
    EXPECT_EQ(req.Header("content-length"), std::to_string(kJson.size()));
  }
}

TEST_F(ContentEncodingTest, UnknownCodingIs415NamingIt) {
  auto r = Post("whatever", "br");
  EXPECT_EQ(r.status, 415);
  EXPECT_NE(r.body.find("'br'"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("unsupported_media_type"), std::string::npos) << r.body;
  EXPECT_EQ(Post(Gzip(kJson), "gzip, compress").status, 415);
  EXPECT_EQ(calls(), 0);
}

TEST_F(ContentEncodingTest, CorruptOrTruncatedBodyIs400) {
  std::string gz = Gzip(kJson);
  std::string zs = Zstd(kJson);
  std::string flipped = gz;
  flipped[gz.size() / 2] = static_cast<char>(flipped[gz.size() / 2] ^ 0x5a);
  for (const auto& [body, encoding] : std::map<std::string, std::string>{
           {"not gzip at all", "gzip"},
           {flipped, "gzip"},
           {gz.substr(0, gz.size() - 9), "gzip"},
           {gz + "trailing", "gzip"},
           {"not zstd at all", "zstd"},
           {zs.substr(0, zs.size() - 3), "zstd"},
           {Deflate(kJson, MAX_WBITS) + "x", "deflate"},
       }) {
    SCOPED_TRACE(encoding + " of " + std::to_string(body.size()) + " bytes");
    auto r = Post(body, encoding);
    EXPECT_EQ(r.status, 400) << r.body;
    EXPECT_NE(r.body.find(encoding), std::string::npos) << r.body;
  }
  EXPECT_EQ(calls(), 0);
}

TEST_F(ContentEncodingTest, BombIsRefused413NamingTheLimit) {
  const std::string big(64 * kLimit, 'a');  // 4 MiB, a few KiB compressed
  for (const auto& [encoding, body] :
       std::map<std::string, std::string>{{"gzip", Gzip(big)}, {"zstd", Zstd(big)}}) {
    SCOPED_TRACE(encoding);
    ASSERT_LT(body.size(), kLimit) << "the compressed body itself is within the limit";
    auto r = Post(body, encoding);
    EXPECT_EQ(r.status, 413) << r.body;
    EXPECT_NE(r.body.find(std::to_string(kLimit)), std::string::npos) << r.body;
  }
  // Exactly at the limit is fine.
  const std::string at(kLimit, 'b');
  EXPECT_EQ(Post(Gzip(at), "gzip").status, 200);
  EXPECT_EQ(seen().body.size(), kLimit);
  EXPECT_EQ(calls(), 1);
}

TEST(DecodeContentEncoding, ConcatenatedGzipMembersAndEmptyBodies) {
  std::string body = Gzip("first ") + Gzip("second");
  ASSERT_TRUE(DecodeContentEncoding("gzip", kLimit, &body).ok());
  EXPECT_EQ(body, "first second");
  std::string empty;
  EXPECT_TRUE(DecodeContentEncoding("gzip", kLimit, &empty).ok());
  EXPECT_EQ(empty, "");
}

TEST(DecodeContentEncoding, ZstdWindowLargerThanAllowedIsRefused) {
  // A streamed frame (no content size) that asks for a 1 GiB window: refused before its
  // buffer is allocated.
  std::unique_ptr<ZSTD_CCtx, size_t (*)(ZSTD_CCtx*)> c(ZSTD_createCCtx(), ZSTD_freeCCtx);
  ASSERT_FALSE(ZSTD_isError(ZSTD_CCtx_setParameter(c.get(), ZSTD_c_windowLog, 30)));
  std::string out(1024, '\0');
  ZSTD_outBuffer ob{out.data(), out.size(), 0};
  ZSTD_inBuffer ib{kJson.data(), kJson.size(), 0};
  ASSERT_FALSE(ZSTD_isError(ZSTD_compressStream2(c.get(), &ob, &ib, ZSTD_e_continue)));
  ZSTD_inBuffer none{nullptr, 0, 0};
  ASSERT_EQ(ZSTD_compressStream2(c.get(), &ob, &none, ZSTD_e_end), 0u);
  out.resize(ob.pos);
  ASSERT_EQ(ZSTD_getFrameContentSize(out.data(), out.size()), ZSTD_CONTENTSIZE_UNKNOWN);
  Status st = DecodeContentEncoding("zstd", kLimit, &out);
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted) << st.ToString();
}

}  // namespace
}  // namespace switchyard::http
