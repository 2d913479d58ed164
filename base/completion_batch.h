// CompletionBatch: groups the cross-thread hand-offs a thread makes while it completes many
// requests at once, so that each target thread is woken once per batch instead of once per
// request.
//
// The store's committer finishes a whole group commit in one go: every record's `done`
// answers an HTTP request whose connection lives on an I/O thread. Posting each answer on
// its own costs a wake-up (a futex or eventfd write, then a context switch) per request,
// which on a small VM costs more than building the answer. With a CompletionBatch open on
// the committing thread, the HTTP server adds each answer to the batch under its target
// (the I/O thread's io_context); when the batch closes, every target gets one posted
// handler that runs its answers in the order they were added.
//
// The same holds for the scheduler's event loop: each durable record is forwarded to it
// (AsioEventLoop::Post), and a post per record woke the scheduler thread, which then
// preempted the committer, once or twice per commit. AsioEventLoop::Post adds to the open
// batch, so the loop gets one handler per commit.
//
// Usage: a thread opens a batch with `CompletionBatch batch;` (it becomes the thread's
// current batch until destroyed; batches nest, the innermost is current) and completes its
// requests; whoever would post work to another thread calls CompletionBatch::Post(), which
// adds to the open batch if there is one and posts otherwise. Destroying the batch posts.
// Work that the opening thread then waits for must not sit in its own batch: such a
// waiter opens a CompletionBatch::Pause first (no batch is current while it lives).
//
// Thread-safety: a batch belongs to the thread that opened it; Add() only from that thread.
#pragma once

#include <functional>
#include <utility>
#include <vector>

namespace switchyard {

class CompletionBatch {
 public:
  using Task = std::function<void()>;
  // Hands one task to the target's thread (e.g. asio::post onto its io_context).
  using Poster = std::function<void(Task)>;

  CompletionBatch() : outer_(current_) { current_ = this; }
  ~CompletionBatch() {
    current_ = outer_;
    Flush();
  }
  CompletionBatch(const CompletionBatch&) = delete;
  CompletionBatch& operator=(const CompletionBatch&) = delete;

  // The batch open on this thread, or nullptr.
  static CompletionBatch* Current() { return current_; }

  // Queues `task` for `target` (any stable address that names the target thread); `post`
  // is used once per target when the batch closes.
  void Add(const void* target, const Poster& post, Task task) {
    for (Group& g : groups_) {
      if (g.target == target) {
        g.tasks.push_back(std::move(task));
        return;
      }
    }
    groups_.push_back(Group{target, post, {}});
    groups_.back().tasks.push_back(std::move(task));
  }

  size_t targets() const { return groups_.size(); }

  // The one way to hand `task` to another thread: into this thread's open batch (under
  // `target`) when there is one, else through `post` at once.
  static void Post(const void* target, const Poster& post, Task task) {
    if (current_ != nullptr) {
      current_->Add(target, post, std::move(task));
    } else {
      post(std::move(task));
    }
  }

  // While alive, no batch is current on this thread: posts go out at once (for a thread
  // that posts work and then blocks until it has run).
  class Pause {
   public:
    Pause() : saved_(current_) { current_ = nullptr; }
    ~Pause() { current_ = saved_; }
    Pause(const Pause&) = delete;
    Pause& operator=(const Pause&) = delete;

   private:
    CompletionBatch* saved_;
  };

 private:
  struct Group {
    const void* target;
    Poster post;
    std::vector<Task> tasks;
  };

  void Flush() {
    for (Group& g : groups_) {
      g.post([tasks = std::move(g.tasks)]() {
        for (const Task& t : tasks) t();
      });
    }
    groups_.clear();
  }

  static inline thread_local CompletionBatch* current_ = nullptr;
  CompletionBatch* outer_;
  std::vector<Group> groups_;
};

}  // namespace switchyard
