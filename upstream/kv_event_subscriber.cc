// The ZeroMQ side of the KV event subscription (kv_event_subscriber.h).
#include "upstream/kv_event_subscriber.h"

#include <zmq.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "base/logging.h"
#include "base/mutex.h"
#include "base/thread_name.h"
#include "upstream/kv_events.h"

namespace switchyard::upstream {
namespace {

// The frames of one message (topic, sequence, payload); false when none could be read.
bool ReadMessage(void* socket, std::vector<std::string>* frames) {
  frames->clear();
  int more = 1;
  while (more) {
    zmq_msg_t msg;
    zmq_msg_init(&msg);
    if (zmq_msg_recv(&msg, socket, ZMQ_DONTWAIT) < 0) {
      zmq_msg_close(&msg);
      return !frames->empty();
    }
    frames->emplace_back(static_cast<const char*>(zmq_msg_data(&msg)), zmq_msg_size(&msg));
    more = zmq_msg_more(&msg);
    zmq_msg_close(&msg);
  }
  return true;
}

uint64_t BigEndian(const std::string& b) {
  uint64_t v = 0;
  for (unsigned char c : b) v = (v << 8) | c;
  return v;
}

}  // namespace

struct KvEventSubscriber::State {
  // One upstream: its socket, index and figures.
  struct Feed {
    void* socket = nullptr;
    KvBlockIndex index;
    KvEventSubscriber::Figures figures;
    bool seen = false;  // a sequence number was read
    uint64_t next_seq = 0;
  };
  void* context = nullptr;
  mutable Mutex mu;
  std::vector<Feed> feeds GUARDED_BY(mu);
  std::atomic<bool> stop{false};
  std::thread thread;

  void Apply(Feed& f, const std::vector<std::string>& frames) REQUIRES(mu);
  void Run();
};

void KvEventSubscriber::State::Apply(Feed& f, const std::vector<std::string>& frames) {
  if (frames.size() != 3 || frames[1].size() != 8) {
    ++f.figures.bad;
    f.figures.error = "a message of " + std::to_string(frames.size()) +
                      " frames (topic, 8-byte sequence, batch expected)";
    return;
  }
  const uint64_t seq = BigEndian(frames[1]);
  if (f.seen && seq != f.next_seq) {
    ++f.figures.gaps;
    f.index = KvBlockIndex();  // lost removals: what it held is no longer known
  }
  f.seen = true;
  f.next_seq = seq + 1;
  Result<KvEventBatch> batch = DecodeKvEventBatch(frames[2]);
  if (!batch.ok()) {
    ++f.figures.bad;
    f.figures.error = batch.status().message();
    return;
  }
  ++f.figures.batches;
  f.figures.events += batch->events.size();
  for (const KvEvent& e : batch->events) f.index.Apply(e);
  f.figures.unchained = f.index.unchained();
  f.figures.gpu_blocks = f.index.blocks("GPU");
  f.figures.cpu_blocks = f.index.blocks("CPU");
}

void KvEventSubscriber::State::Run() {
  SetThreadName("sy-kv-events");
  std::vector<zmq_pollitem_t> items;
  std::vector<size_t> which;
  {
    MutexLock lock(&mu);
    for (size_t i = 0; i < feeds.size(); ++i)
      if (feeds[i].socket) {
        items.push_back({feeds[i].socket, 0, ZMQ_POLLIN, 0});
        which.push_back(i);
      }
  }
  std::vector<std::string> frames;
  while (!stop.load()) {
    if (zmq_poll(items.data(), static_cast<int>(items.size()), 100) <= 0) continue;
    for (size_t k = 0; k < items.size(); ++k) {
      if (!(items[k].revents & ZMQ_POLLIN)) continue;
      while (ReadMessage(items[k].socket, &frames)) {
        MutexLock lock(&mu);
        Apply(feeds[which[k]], frames);
      }
    }
  }
}

Result<std::unique_ptr<KvEventSubscriber>> KvEventSubscriber::Start(
    std::vector<std::string> endpoints) {
  auto state = std::make_shared<State>();
  state->context = zmq_ctx_new();
  MutexLock lock(&state->mu);
  state->feeds.resize(endpoints.size());
  for (size_t i = 0; i < endpoints.size(); ++i) {
    State::Feed& f = state->feeds[i];
    f.figures.endpoint = endpoints[i];
    if (endpoints[i].empty()) continue;
    f.socket = zmq_socket(state->context, ZMQ_SUB);
    const int linger = 0;
    zmq_setsockopt(f.socket, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(f.socket, ZMQ_SUBSCRIBE, "", 0);
    if (zmq_connect(f.socket, endpoints[i].c_str()) != 0) {
      Status st = Status::InvalidArgument("KV events endpoint '" + endpoints[i] +
                                          "': " + zmq_strerror(zmq_errno()));
      for (State::Feed& g : state->feeds)
        if (g.socket) zmq_close(g.socket);
      zmq_ctx_term(state->context);
      return st;
    }
  }
  lock.Unlock();
  state->thread = std::thread([s = state.get()] { s->Run(); });
  return std::unique_ptr<KvEventSubscriber>(new KvEventSubscriber(std::move(state)));
}

KvEventSubscriber::KvEventSubscriber(std::shared_ptr<State> state) : state_(std::move(state)) {}

KvEventSubscriber::~KvEventSubscriber() {
  state_->stop = true;
  state_->thread.join();
  MutexLock lock(&state_->mu);
  for (State::Feed& f : state_->feeds)
    if (f.socket) zmq_close(f.socket);
  zmq_ctx_term(state_->context);
}

int64_t KvEventSubscriber::HeldPrefixTokens(size_t i, std::span<const int32_t> tokens) const {
  MutexLock lock(&state_->mu);
  if (i >= state_->feeds.size()) return 0;
  const KvBlockIndex& index = state_->feeds[i].index;
  return std::max(index.HeldPrefixTokens(tokens, "GPU"), index.HeldPrefixTokens(tokens, "CPU"));
}

std::vector<KvEventSubscriber::Figures> KvEventSubscriber::figures() const {
  MutexLock lock(&state_->mu);
  std::vector<Figures> out;
  for (const State::Feed& f : state_->feeds) out.push_back(f.figures);
  return out;
}

}  // namespace switchyard::upstream
