// DirectPutter (direct_put.h).
#include "kv_store/direct_put.h"

#include <algorithm>

#include "base/ids.h"
#include "base/logging.h"
#include "base/mutex.h"

namespace switchyard::kv_store {
namespace {

using Clock = std::chrono::steady_clock;

// How long the sender waits for credit to return before trying again, and the pause
// before re-sending a put the destination refused for credit (doubling per refusal).
constexpr auto kCreditWait = std::chrono::milliseconds(1);
constexpr auto kRefusedBackoff = std::chrono::microseconds(500);
constexpr auto kMaxRefusedBackoff = std::chrono::milliseconds(20);

std::string SourceName(const DirectBlock& b) {
  return "source block " + std::to_string(b.source_block_id) + " (generation " +
         std::to_string(b.source_generation) + ")";
}

// Why this store refused to hand out a source block (ReadCommitted's reason).
Status SourceRefusal(RejectReason r, const DirectBlock& b, uint64_t named, uint64_t actual) {
  switch (r) {
    case RejectReason::kNotFound:
      return Status::DataLoss(SourceName(b) + " is not committed in this store",
                              ErrorScope::kBlock);
    case RejectReason::kStaleCommEpoch:
      return Status::Unavailable("the order names store incarnation " + HexId(named) +
                                     ", this store is " + HexId(actual) + " (it restarted)",
                                 ErrorScope::kRemote);
    default:
      return Status::FailedPrecondition(
          SourceName(b) + " refused: " + std::string(RejectReasonName(r)) +
          " (only a committed block of the owner, epochs and generation serve names is sent)");
  }
}

}  // namespace

struct DirectPutter::Job {
  DirectPutOrder order;
  Done done;
  Clock::time_point received, deadline, not_before;
  std::vector<StoredBlock> pinned;  // the source blocks, held until the put ended
  std::shared_ptr<KvStoreClient> client;
  PutRequest request;
  transport::TransferOptions options;
  TransferEvents events;  // the last put's
  uint32_t credit_retries = 0;
  bool prepared = false;
  bool unreachable = false;
};

DirectPutter::DirectPutter(KvStoreServer* source, DirectPutterOptions options)
    : source_(source), options_(std::move(options)) {
  sender_ = std::thread([this] { SendLoop(); });
  completer_ = std::thread([this] { CompleteLoop(); });
}

DirectPutter::~DirectPutter() {
  {
    MutexLock l(&mu_);
    stop_ = true;
  }
  send_cv_.SignalAll();
  credit_cv_.SignalAll();
  sender_.join();  // reports what it had not started; what it posted is in posted_
  {
    MutexLock l(&mu_);
    sender_done_ = true;
  }
  complete_cv_.SignalAll();
  completer_.join();
}

void DirectPutter::Submit(DirectPutOrder order, Done done) {
  auto job = std::make_shared<Job>();
  job->received = Clock::now();
  Duration timeout = order.timeout.count() > 0 ? order.timeout : options_.default_timeout;
  job->deadline = job->received + timeout;
  job->order = std::move(order);
  job->done = std::move(done);
  {
    MutexLock l(&mu_);
    ++stats_.orders;
    queue_.push_back(std::move(job));
  }
  send_cv_.Signal();
}

DirectPutStats DirectPutter::stats() const {
  MutexLock l(&mu_);
  return stats_;
}

void DirectPutter::SendLoop() {
  while (true) {
    std::shared_ptr<Job> job;
    {
      MutexLock l(&mu_);
      while (!stop_ && queue_.empty()) send_cv_.Wait(&mu_);
      if (queue_.empty()) return;  // stopping, nothing left
      job = queue_.front();
      queue_.pop_front();
      // A put refused for credit waits a little: the destination's other senders hold it.
      if (!stop_ && job->not_before > Clock::now())
        while (!stop_ && send_cv_.WaitUntil(&mu_, job->not_before)) {
        }
      if (stop_) {
        l.Unlock();
        Finish(*job, Status::Cancelled("direct put: the worker is stopping"));
        continue;
      }
    }
    Status st = job->prepared ? Status::OK() : Prepare(*job);
    if (!st.ok()) {
      Finish(*job, st);
      continue;
    }
    auto put = PostWithCredit(*job);
    if (!put.ok()) {
      Finish(*job, put.status().Annotate("direct put to " + job->order.destination.address));
      continue;
    }
    {
      MutexLock l(&mu_);
      posted_.push_back(Posted{job, std::nullopt});
      posted_.back().put.emplace(std::move(*put));
    }
    complete_cv_.Signal();
  }
}

void DirectPutter::CompleteLoop() {
  while (true) {
    std::optional<Posted> p;
    {
      MutexLock l(&mu_);
      while (!sender_done_ && posted_.empty()) complete_cv_.Wait(&mu_);
      if (posted_.empty()) return;  // the sender stopped and everything was acked
      p.emplace(std::move(posted_.front()));
      posted_.pop_front();
    }
    Result<TransferEvents> ev = p->put->Wait();
    {
      MutexLock l(&mu_);
      ++acks_;  // the put's credit lease is released: a waiting sender may post
    }
    credit_cv_.SignalAll();
    OnAcked(std::move(p->job), std::move(ev));
  }
}

Status DirectPutter::Prepare(Job& job) {
  const DirectPutOrder& o = job.order;
  if (o.blocks.empty())
    return Status::InvalidArgument("direct put: order " + std::to_string(o.order_id) +
                                   " names no blocks");
  if (o.destination.address.empty())
    return Status::InvalidArgument("direct put: order " + std::to_string(o.order_id) +
                                   " names no destination store");
  SY_RETURN_IF_ERROR(PinSource(job));
  auto client = ClientFor(o.destination, job.deadline - Clock::now());
  if (!client.ok()) {
    job.unreachable = true;
    return Status::Unavailable("direct put: cannot reach the destination store at " +
                                   o.destination.address + ": " + client.status().message(),
                               ErrorScope::kRemote);
  }
  if ((*client)->communicator_epoch() != o.destination.communicator_epoch)
    return Status::Unavailable("direct put: the destination store at " + o.destination.address +
                                   " is incarnation " + HexId((*client)->communicator_epoch()) +
                                   ", the order names " + HexId(o.destination.communicator_epoch) +
                                   " (it restarted); nothing sent",
                               ErrorScope::kRemote);
  job.client = *client;
  PutRequest& r = job.request;
  r.workflow_id = o.destination.workflow_id;
  r.context_id = o.destination.context_id;
  r.model_epoch = o.destination.model_epoch;
  r.generation = o.generation;
  for (size_t i = 0; i < o.blocks.size(); ++i) {
    const StoredBlock& s = job.pinned[i];
    r.blocks.push_back({o.blocks[i].block_id, s.data(), s.bytes, s.checksum});
  }
  job.options.traffic_class = o.traffic_class;
  job.options.flow_key = o.flow_key;
  job.options.deadline = job.deadline;
  job.prepared = true;
  return Status::OK();
}

Status DirectPutter::PinSource(Job& job) {
  const DirectPutOrder& o = job.order;
  for (const DirectBlock& b : o.blocks) {
    GetRequest g;
    g.communicator_epoch = o.source.communicator_epoch;
    g.model_epoch = o.source.model_epoch;
    g.generation = b.source_generation;
    g.workflow_id = o.source.workflow_id;
    g.context_id = o.source.context_id;
    g.block_ids = {b.source_block_id};
    std::vector<StoredBlock> got;
    RejectReason r = source_->ReadCommitted(g, &got);
    if (r != RejectReason::kNone)
      return SourceRefusal(r, b, o.source.communicator_epoch, source_->communicator_epoch());
    const StoredBlock& s = got.front();
    if (s.bytes != b.bytes)
      return Status::InvalidArgument(SourceName(b) + " holds " + std::to_string(s.bytes) +
                                     " B, the order moves " + std::to_string(b.bytes) + " B");
    if (b.checksum && *b.checksum != s.checksum)
      return Status::DataLoss(SourceName(b) + ": its stored checksum " + HexId(s.checksum) +
                                  " is not serve's " + HexId(*b.checksum),
                              ErrorScope::kBlock);
    job.pinned.push_back(s);
  }
  return Status::OK();
}

Result<std::shared_ptr<KvStoreClient>> DirectPutter::ClientFor(const StoreRef& dst,
                                                               Duration timeout) {
  bool broken;
  {
    MutexLock l(&mu_);
    broken = broken_.erase(dst.address) > 0;
  }
  auto it = clients_.find(dst.address);
  if (it != clients_.end() && !broken && it->second->communicator_epoch() == dst.communicator_epoch)
    return it->second;
  KvStoreClientOptions co;
  co.transport = dst.transport.empty() ? std::string("ucx") : dst.transport;
  co.transport_config = dst.transport_config;
  co.sender_name = options_.sender_name;
  co.ack_timeout = std::max<Duration>(timeout, Millis(1));
  SY_ASSIGN_OR_RETURN(std::unique_ptr<KvStoreClient> c, KvStoreClient::Connect(dst.address, co));
  std::shared_ptr<KvStoreClient> s(std::move(c));
  clients_[dst.address] = s;  // puts still on an older session keep it alive
  return s;
}

Result<PendingPut> DirectPutter::PostWithCredit(Job& job) {
  while (true) {
    uint64_t seen;
    {
      MutexLock l(&mu_);
      if (stop_) return Status::Cancelled("direct put: the worker is stopping");
      seen = acks_;
    }
    auto p = job.client->PostPut(job.request, job.options);
    if (p.ok() || !p.status().IsResourceExhausted()) return p;
    if (Clock::now() > job.deadline)
      return Status::DeadlineExceeded("no credit left at the destination before the deadline (" +
                                      p.status().message() + ")");
    MutexLock l(&mu_);
    const auto end = std::chrono::steady_clock::now() + kCreditWait;
    while (!stop_ && acks_ == seen && credit_cv_.WaitUntil(&mu_, end)) {
    }
  }
}

void DirectPutter::OnAcked(std::shared_ptr<Job> job, Result<TransferEvents> ev) {
  const std::string what = "direct put to " + job->order.destination.address;
  if (!ev.ok()) {
    // Sent, and no answer: what the destination did is unknown to this sender.
    job->events.posted = true;
    if (ev.status().IsUnavailable()) {
      MutexLock l(&mu_);
      broken_.insert(job->order.destination.address);
    }
    return Finish(*job, ev.status());
  }
  job->events = *ev;
  if (ev->rejected && ev->reason == RejectReason::kCredit) {
    MutexLock l(&mu_);
    if (!stop_ && Clock::now() < job->deadline) {  // the put was discarded: send it again
      ++job->credit_retries;
      ++stats_.credit_retries;
      job->not_before =
          Clock::now() + std::min<Clock::duration>(
                             kRefusedBackoff * (1u << std::min<uint32_t>(job->credit_retries, 6)),
                             kMaxRefusedBackoff);
      queue_.push_front(std::move(job));
      l.Unlock();
      send_cv_.Signal();
      return;
    }
  }
  if (!ev->committed) return Finish(*job, RejectStatus(ev->reason, what, ev->message));
  if (!ev->receiver_transport_complete || !ev->validated)
    return Finish(*job, Status::Internal(what + ": the ack says committed without transport "
                                                "completion and validation"));
  Finish(*job, Status::OK());
}

void DirectPutter::Finish(Job& job, Status status) {
  DirectPutOutcome out;
  out.order_id = job.order.order_id;
  out.events = job.events;
  out.unreachable = job.unreachable;
  out.credit_retries = job.credit_retries;
  out.took = Clock::now() - job.received;
  if (status.ok()) {
    for (const BlockSource& b : job.request.blocks) {
      out.blocks.push_back({b.block_id, b.bytes, b.checksum.value_or(0)});
      out.bytes += b.bytes;
    }
  }
  out.status = status;
  job.pinned.clear();  // the put ended: the source bytes may go
  {
    MutexLock l(&mu_);
    if (status.ok()) {
      ++stats_.puts_committed;
      stats_.bytes_committed += out.bytes;
    } else {
      ++stats_.orders_failed;
    }
  }
  LogKeys keys;
  keys.transfer_id = std::to_string(job.order.transfer_id);
  keys.model_epoch = job.order.destination.model_epoch;
  keys.communicator_epoch = job.order.destination.communicator_epoch;
  keys.With("order", std::to_string(out.order_id))
      .With("destination", job.order.destination.address)
      .With("bytes", std::to_string(out.bytes));
  if (status.ok()) {
    Log(LogLevel::kDebug, "direct put committed", keys);
  } else {
    Log(LogLevel::kWarn, "direct put failed: " + status.ToString(), keys);
  }
  if (job.done) job.done(std::move(out));
}

}  // namespace switchyard::kv_store
