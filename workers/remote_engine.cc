// RemoteEngine (remote_engine.h): a BatchingEngine with a RemoteStepRunner.
#include "workers/remote_engine.h"

#include <string>
#include <utility>
#include <vector>

#include "workers/control_msgs.h"

namespace switchyard::workers {
namespace {

using executors::SequenceSpec;
using executors::StepItem;
using executors::StepShape;

class RemoteStepRunner final : public executors::StepRunner {
 public:
  RemoteStepRunner(EventLoop* loop, RemoteWorker* remote)
      : remote_(remote), state_(std::make_shared<State>()) {
    state_->loop = loop;
    name_ = "remote " + remote->hello().engine() + " engine (worker " +
            remote->hello().worker_id() + ")";
    std::shared_ptr<State> st = state_;
    RemoteWorker::Sink sink;
    sink.on_message = [st](const v1::WorkerControl& m) {
      if (!m.has_step_done()) return;
      st->loop->Post([st, done = m.step_done()]() { OnStepDone(*st, done); });
    };
    sink.on_lost = [st](const Status& why) {
      st->loop->Post([st, why]() {
        st->lost = why;
        FailPending(*st);
      });
    };
    // A new incarnation: steps go to it again (posted before the scheduler hears of it).
    sink.on_rejoined = [st]() { st->loop->Post([st]() { st->lost = Status::OK(); }); };
    remote_->SetSink(std::move(sink));
    if (remote_->lost())
      state_->lost =
          Status::Unavailable("worker " + remote->hello().worker_id() + " lost", ErrorScope::kPeer);
  }
  ~RemoteStepRunner() override { Stop(); }

  std::string_view engine_name() const override { return name_; }
  // true: the engine then names every batched sequence in the step (StepItem), so a lost
  // worker fails each of them; the worker's simulated runner emits no tokens (-1).
  bool computes() const override { return true; }

  Status OnAdmit(const SequenceSpec& spec, const std::string& primary,
                 int64_t fresh_from) override {
    v1::WorkerControl m;
    ToAdmit(spec, primary, fresh_from, m.mutable_seq_admit());
    Send(m);
    return Status::OK();  // a worker that refuses fails the sequence in its next step
  }
  void OnResize(const std::string& context, int64_t tokens) override {
    v1::WorkerControl m;
    m.mutable_context_resize()->set_context(context);
    m.mutable_context_resize()->set_tokens(tokens);
    Send(m);
  }
  void OnEmitted(const std::string& primary, int64_t position, int32_t token) override {
    v1::WorkerControl m;
    m.mutable_token_emitted()->set_primary(primary);
    m.mutable_token_emitted()->set_position(position);
    m.mutable_token_emitted()->set_token(token);
    Send(m);
  }
  void OnLeave(const std::string& seq) override {
    v1::WorkerControl m;
    m.mutable_seq_leave()->set_seq(seq);
    Send(m);
  }

  void Run(const StepShape& shape, std::vector<StepItem>* items,
           std::function<void()> done) override {
    State& st = *state_;
    st.pending = true;
    st.step_id = ++st.next_step;
    st.items = items;
    st.done = std::move(done);
    if (!st.lost.ok()) {  // never synchronously: the engine is inside StartStep
      std::shared_ptr<State> s = state_;
      st.loop->Post([s]() { FailPending(*s); });
      return;
    }
    v1::WorkerControl m;
    ToRunStep(st.step_id, shape, *items, m.mutable_run_step());
    Send(m);  // a failed send loses the worker, which fails the step
  }

  void Stop() override {
    if (state_->stopped) return;
    state_->stopped = true;
    state_->pending = false;
    state_->done = nullptr;
    remote_->SetSink({});
  }

 private:
  struct State {
    EventLoop* loop = nullptr;
    bool stopped = false;
    Status lost;  // non-OK once the worker is lost
    uint64_t next_step = 0, step_id = 0;
    bool pending = false;
    std::vector<StepItem>* items = nullptr;
    std::function<void()> done;
  };

  static void Finish(State& st) {
    st.pending = false;
    st.items = nullptr;
    auto done = std::move(st.done);
    st.done = nullptr;
    if (done) done();
  }
  static void OnStepDone(State& st, const v1::StepDone& d) {
    if (st.stopped || !st.pending || d.step_id() != st.step_id) return;
    for (int i = 0; i < d.items_size() && i < static_cast<int>(st.items->size()); ++i)
      FromItemResult(d.items(i), &(*st.items)[static_cast<size_t>(i)]);
    Finish(st);
  }
  static void FailPending(State& st) {
    if (st.stopped || !st.pending) return;
    for (StepItem& it : *st.items) it.status = st.lost;
    Finish(st);
  }
  void Send(const v1::WorkerControl& m) {
    if (state_->lost.ok()) (void)remote_->Send(m);
  }

  RemoteWorker* remote_;
  std::shared_ptr<State> state_;
  std::string name_;
};

}  // namespace

std::unique_ptr<executors::BatchingEngine> MakeRemoteEngine(EventLoop* loop, int worker,
                                                            const executors::EngineLimits& limits,
                                                            RemoteWorker* remote) {
  return std::make_unique<executors::BatchingEngine>(
      loop, worker, limits, std::make_unique<RemoteStepRunner>(loop, remote));
}

}  // namespace switchyard::workers
