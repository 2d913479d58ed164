// What vLLM's KV event publisher sends, for the tests: batches in its later msgpack form
// (maps with a "type" tag, 32-byte digests as block hashes, fields with defaults omitted)
// and a publisher speaking its wire format: [topic, 8-byte big-endian sequence, batch].
//
// Thread-safety: a Publisher is used from the test's thread only.
#pragma once

#include <gtest/gtest.h>
#include <zmq.h>

#include <msgpack.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace switchyard::upstream::testing {

using Packer = msgpack::packer<msgpack::sbuffer>;

inline std::string Digest(char c) { return std::string(32, c); }

// A block hash as vLLM writes a digest: msgpack bin.
inline void PackBin(Packer& p, const std::string& h) {
  p.pack_bin(static_cast<uint32_t>(h.size()));
  p.pack_bin_body(h.data(), static_cast<uint32_t>(h.size()));
}
inline void PackHashes(Packer& p, const std::vector<std::string>& hashes) {
  p.pack_array(static_cast<uint32_t>(hashes.size()));
  for (const std::string& h : hashes) PackBin(p, h);
}

inline void PackStoredMap(Packer& p, const std::vector<std::string>& hashes,
                          const std::string* parent, const std::vector<int32_t>& tokens,
                          const char* medium) {
  p.pack_map(8);
  p.pack(std::string("type"));
  p.pack(std::string("BlockStored"));
  p.pack(std::string("block_hashes"));
  PackHashes(p, hashes);
  p.pack(std::string("parent_block_hash"));
  if (parent) {
    PackBin(p, *parent);
  } else {
    p.pack_nil();
  }
  p.pack(std::string("token_ids"));
  p.pack(tokens);
  p.pack(std::string("block_size"));
  p.pack(16);
  p.pack(std::string("lora_id"));
  p.pack_nil();
  p.pack(std::string("medium"));
  p.pack(std::string(medium));
  p.pack(std::string("lora_name"));
  p.pack_nil();
}

inline std::string MapBatch(const std::vector<std::string>& hashes, const std::string* parent,
                            const std::vector<int32_t>& tokens, const char* medium = "GPU") {
  msgpack::sbuffer buf;
  Packer p(buf);
  p.pack_map(3);
  p.pack(std::string("ts"));
  p.pack(1733500001.5);
  p.pack(std::string("events"));
  p.pack_array(1);
  PackStoredMap(p, hashes, parent, tokens, medium);
  p.pack(std::string("data_parallel_rank"));
  p.pack(0);
  return std::string(buf.data(), buf.size());
}

// A batch of one BlockRemoved of `hashes`.
inline std::string RemovedBatch(const std::vector<std::string>& hashes) {
  msgpack::sbuffer buf;
  Packer p(buf);
  p.pack_map(2);
  p.pack(std::string("ts"));
  p.pack(1733500002.0);
  p.pack(std::string("events"));
  p.pack_array(1);
  p.pack_map(3);
  p.pack(std::string("type"));
  p.pack(std::string("BlockRemoved"));
  p.pack(std::string("block_hashes"));
  PackHashes(p, hashes);
  p.pack(std::string("medium"));
  p.pack(std::string("GPU"));
  return std::string(buf.data(), buf.size());
}

// A publisher as vLLM's: [topic, sequence, payload]. XPUB, so the test can wait for the
// subscription before publishing (a PUB socket drops what it sends before a subscriber
// joined).
class Publisher {
 public:
  Publisher() : ctx_(zmq_ctx_new()), sock_(zmq_socket(ctx_, ZMQ_XPUB)) {
    const int timeout_ms = 30000;  // a subscriber that never comes fails the test, not hangs it
    zmq_setsockopt(sock_, ZMQ_RCVTIMEO, &timeout_ms, sizeof timeout_ms);
    EXPECT_EQ(zmq_bind(sock_, "tcp://127.0.0.1:*"), 0);
    char ep[256];
    size_t n = sizeof ep;
    zmq_getsockopt(sock_, ZMQ_LAST_ENDPOINT, ep, &n);
    endpoint_ = ep;
  }
  ~Publisher() {
    zmq_close(sock_);
    zmq_ctx_term(ctx_);
  }
  const std::string& endpoint() const { return endpoint_; }
  void WaitForSubscriber() {
    char sub[64];
    EXPECT_GT(zmq_recv(sock_, sub, sizeof sub, 0), 0);  // blocks until the SUB subscribed
  }
  void Send(uint64_t seq, const std::string& payload) {
    std::string s(8, '\0');
    for (int i = 7; i >= 0; --i, seq >>= 8) s[static_cast<size_t>(i)] = char(seq & 0xff);
    zmq_send(sock_, "", 0, ZMQ_SNDMORE);
    zmq_send(sock_, s.data(), s.size(), ZMQ_SNDMORE);
    zmq_send(sock_, payload.data(), payload.size(), 0);
  }
  void SendFrames(const std::vector<std::string>& frames) {
    for (size_t i = 0; i < frames.size(); ++i)
      zmq_send(sock_, frames[i].data(), frames[i].size(), i + 1 < frames.size() ? ZMQ_SNDMORE : 0);
  }

 private:
  void* ctx_;
  void* sock_;
  std::string endpoint_;
};

}  // namespace switchyard::upstream::testing
