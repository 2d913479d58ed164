// RemoteEngine (remote_engine.h): a BatchingEngine with a RemoteStepRunner.
#include "workers/remote_engine.h"

#include <atomic>
#include <deque>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "cpu_engine/cpu_step_runner.h"
#include "kv_tiers/remote/kv_store_tier.h"
#include "workers/control_msgs.h"

namespace switchyard::workers {
namespace {

namespace kv_store = kv_store;
using executors::SequenceSpec;
using executors::StepItem;
using executors::StepShape;

// What the runner and the KV port share, on the loop.
struct State {
  EventLoop* loop = nullptr;
  bool stopped = false;
  Status lost;  // non-OK once the worker is lost
  uint64_t next_step = 0, step_id = 0;
  bool pending = false;
  std::vector<StepItem>* items = nullptr;
  std::function<void()> done;
  // The engine's names, the last one current (the worker's id: a rejoin may change it).
  // Never modified once added, and read through `name` from any thread.
  std::deque<std::string> names;
  std::atomic<const std::string*> name{nullptr};
  void SetName(std::string n) {
    names.push_back(std::move(n));
    name.store(&names.back());
  }
  // KV export/import orders awaiting their answer, by order id.
  uint64_t next_order = 0;
  std::map<uint64_t, std::function<void(const v1::WorkerControl*)>> orders;
};

// Fails every KV order in flight (the worker is lost, or the engine goes).
void FailOrders(State& st) {
  auto orders = std::move(st.orders);
  st.orders.clear();
  for (auto& [id, fn] : orders) fn(nullptr);
}

class RemoteStepRunner final : public executors::StepRunner {
 public:
  RemoteStepRunner(EventLoop* loop, RemoteWorker* remote, const RemoteEngineOptions& o)
      : remote_(remote), options_(o), state_(std::make_shared<State>()) {
    state_->loop = loop;
    state_->SetName(NameOf(*remote));
    std::shared_ptr<State> st = state_;
    RemoteWorker::Sink sink;
    sink.on_message = [st](const v1::WorkerControl& m) {
      if (m.has_step_done()) {
        st->loop->Post([st, done = m.step_done()]() { OnStepDone(*st, done); });
        return;
      }
      uint64_t order = m.has_kv_export_done()   ? m.kv_export_done().order_id()
                       : m.has_kv_import_done() ? m.kv_import_done().order_id()
                                                : 0;
      if (order == 0) return;
      st->loop->Post([st, order, m]() {
        auto it = st->orders.find(order);
        if (it == st->orders.end()) return;
        auto fn = std::move(it->second);
        st->orders.erase(it);
        fn(&m);
      });
    };
    sink.on_lost = [st](const Status& why) {
      st->loop->Post([st, why]() {
        st->lost = why;
        FailPending(*st);
        FailOrders(*st);
      });
    };
    // A new incarnation: steps go to it again (posted before the scheduler hears of it).
    sink.on_rejoined = [st, remote]() {
      st->loop->Post([st, remote]() {
        st->lost = Status::OK();
        st->SetName(NameOf(*remote));  // a spare slot's or a replacement's worker
      });
    };
    remote_->SetSink(std::move(sink));
    if (remote_->lost())
      state_->lost = Status::Unavailable("worker " + remote->hello().worker_id() + " lost",
                                         ErrorScope::kRemote);
  }
  ~RemoteStepRunner() override { Stop(); }

  std::string_view engine_name() const override { return *state_->name.load(); }
  // true: the engine then names every batched sequence in the step (StepItem), so a lost
  // worker fails each of them; the worker's simulated runner emits no tokens (-1).
  bool computes() const override { return true; }

  Status OnAdmit(const SequenceSpec& spec, const std::string& primary,
                 int64_t fresh_from) override {
    v1::WorkerControl m;
    v1::SeqAdmit* a = m.mutable_seq_admit();
    ToAdmit(spec, primary, fresh_from, a);
    if (options_.tokens) {  // a computing engine: the ids of every context it reads
      SY_RETURN_IF_ERROR(
          cpu_engine::RecordAdmit(options_.tokens, options_.vocab, spec, primary, fresh_from));
      auto add = [&](const std::string& key) {
        const std::vector<int32_t>* ids = options_.tokens->Find(key);
        v1::ControlContextTokens* t = a->add_context_tokens();
        t->set_key(key);
        if (ids) t->mutable_ids()->Add(ids->begin(), ids->end());
      };
      bool primary_listed = false;
      for (const executors::SeqContext& c : spec.contexts) {
        add(c.key);
        primary_listed |= c.key == primary;
      }
      if (!primary_listed) add(primary);
    }
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
    if (options_.tokens) {
      std::vector<int32_t>& l = options_.tokens->Of(primary);
      l.resize(static_cast<size_t>(position));
      l.push_back(token);
    }
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
  const std::shared_ptr<State>& state() const { return state_; }

 private:
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

  static std::string NameOf(const RemoteWorker& r) {
    if (r.vacant()) return "remote engine (spare slot " + std::to_string(r.index()) + ")";
    const v1::WorkerHello h = r.hello();
    return "remote " + h.engine() + " engine (worker " + h.worker_id() + ")";
  }

  RemoteWorker* remote_;
  RemoteEngineOptions options_;
  std::shared_ptr<State> state_;
};

// The engine's pool as serve's KV mover sees it (executors::RemoteEngineKv): export and
// import orders over the control connection, the worker's KV store as the tier between.
class RemoteKvPort final : public executors::RemoteEngineKv {
 public:
  RemoteKvPort(std::shared_ptr<State> st, RemoteWorker* remote,
               kv_tiers::remote::KvStoreTier* store, const executors::BatchingEngine* engine)
      : st_(std::move(st)),
        remote_(remote),
        store_(store),
        engine_(engine),
        name_("cpu engine KV pool of worker " + std::to_string(remote->index()) + " (joined)") {}

  // By the worker's scheduler index (whichever worker holds the slot), fixed: read under
  // the driver's lock, it must not take the worker's.
  std::string kv_pool_name() const override { return name_; }
  int64_t kv_blocks(const std::string& context) const override {
    int64_t t = engine_->context_tokens(context);
    return t < 0 ? -1 : executors::BlocksFor(t, engine_->limits().block_tokens);
  }

  void Export(const std::string& context, std::vector<kv_tiers::Extent> targets,
              std::function<void(Result<Exported>)> done) override {
    v1::WorkerControl m;
    v1::KvExport* x = m.mutable_kv_export();
    x->set_context(context);
    std::vector<kv_tiers::remote::KvStoreTier::DirectEnd> ends;
    for (const kv_tiers::Extent& e : targets) {
      Result<kv_tiers::remote::KvStoreTier::DirectEnd> d = store_->DirectDestination(e, e.bytes);
      if (!d.ok()) return Post([done, s = d.status()]() { done(s); });
      if (ends.empty()) ToStoreRef(d->store, x->mutable_store());
      v1::KvStoreBlock* b = x->add_blocks();
      b->set_block_id(d->block_id);
      b->set_generation(d->generation);
      b->set_bytes(d->bytes);
      ends.push_back(*d);
    }
    auto answer = [this, targets, ends, done](const v1::WorkerControl* m) {
      if (!m) return done(Lost());
      const v1::KvExportDone& r = m->kv_export_done();
      // Every block the worker may have committed is recorded, so that a free drops it there.
      kv_store::TransferEvents ev;
      ev.posted = ev.transport_complete = ev.receiver_transport_complete = true;
      ev.validated = ev.committed = r.status_code() == 0;
      for (size_t i = 0; i < targets.size(); ++i)
        store_->RecordDirectWrite(targets[i], ends[i], ev);
      Status st = StatusFromWire(r.status_code(), r.status_message(), ErrorScope::kTransfer);
      if (!st.ok()) return done(st);
      Exported out;
      out.valid_tokens = r.valid_tokens();
      out.checksums.assign(r.checksums().begin(), r.checksums().end());
      done(std::move(out));
    };
    Order(std::move(m), std::move(answer));
  }

  void Import(const std::string& context, std::vector<kv_tiers::Extent> sources,
              std::vector<uint64_t> checksums, int64_t valid_tokens,
              std::function<void(Status)> done) override {
    v1::WorkerControl m;
    v1::KvImport* x = m.mutable_kv_import();
    x->set_context(context);
    x->set_valid_tokens(valid_tokens);
    for (size_t i = 0; i < sources.size(); ++i) {
      Result<kv_tiers::remote::KvStoreTier::DirectEnd> d =
          store_->DirectSource(sources[i], sources[i].bytes);
      if (!d.ok()) return Post([done, s = d.status()]() { done(s); });
      if (i == 0) ToStoreRef(d->store, x->mutable_store());
      v1::KvStoreBlock* b = x->add_blocks();
      b->set_block_id(d->block_id);
      b->set_generation(d->generation);
      b->set_bytes(d->bytes);
      if (i < checksums.size()) b->set_checksum(checksums[i]);
    }
    Order(std::move(m), [this, done](const v1::WorkerControl* m) {
      if (!m) return done(Lost());
      const v1::KvImportDone& r = m->kv_import_done();
      done(StatusFromWire(r.status_code(), r.status_message(), ErrorScope::kTransfer));
    });
  }

 private:
  Status Lost() const {
    return st_->lost.ok() ? Status::Aborted(kv_pool_name() + ": the engine stopped") : st_->lost;
  }
  void Post(std::function<void()> fn) { st_->loop->Post(std::move(fn)); }
  // Sends `m` (its order id set here) and keeps `answer` for its reply; a lost worker
  // answers at once (posted).
  void Order(v1::WorkerControl m, std::function<void(const v1::WorkerControl*)> answer) {
    if (!st_->lost.ok() || st_->stopped) return Post([answer]() { answer(nullptr); });
    const uint64_t id = ++st_->next_order;
    if (m.has_kv_export()) m.mutable_kv_export()->set_order_id(id);
    if (m.has_kv_import()) m.mutable_kv_import()->set_order_id(id);
    st_->orders[id] = std::move(answer);
    (void)remote_->Send(m);  // a failed send loses the worker, which fails the order
  }

  std::shared_ptr<State> st_;
  RemoteWorker* remote_;
  kv_tiers::remote::KvStoreTier* store_;
  const executors::BatchingEngine* engine_;
  const std::string name_;
};

}  // namespace

RemoteEngine MakeRemoteEngine(EventLoop* loop, int worker, const executors::EngineLimits& limits,
                              RemoteWorker* remote, const RemoteEngineOptions& options) {
  kv_tiers::remote::KvStoreTier* store = options.store;
  auto runner = std::make_unique<RemoteStepRunner>(loop, remote, options);
  std::shared_ptr<State> st = runner->state();
  RemoteEngine out;
  out.engine = std::make_unique<executors::BatchingEngine>(loop, worker, limits, std::move(runner));
  // A computing serve (the token record given) and a store: the worker's pool moves
  // through it (a spare slot's worker too, once one takes it).
  if (store && options.tokens)
    out.kv = std::make_shared<RemoteKvPort>(st, remote, store, out.engine.get());
  return out;
}

}  // namespace switchyard::workers
