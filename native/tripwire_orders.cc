// The standing orders' thread and table (tripwire_orders.h).
#ifdef EVICTD_TRIPWIRE
#include "tripwire_orders.h"

#include <errno.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "clock.h"
#include "reap.h"
#include "thread_sched.h"
#include "tripwire_line.h"
#include "tripwire_ring.h"

namespace evictd {

TripwireOrders* TripwireOrders::Start(TripwireRing* ring, uv_loop_t* loop, const UseLog* log, int* err) {
  auto* self = new TripwireOrders(ring, log);
  auto fail = [&](int e) -> TripwireOrders* {
    *err = e;
    if (self->rb_ != nullptr) ring->program.bpf->ring_buffer_free(self->rb_);
    if (self->epoll_fd_ >= 0) close(self->epoll_fd_);
    if (self->stop_fd_ >= 0) close(self->stop_fd_);
    delete self;
    return nullptr;
  };
  self->rb_ = ring->program.bpf->ring_buffer_new(ring->program.orders_fd, &TripwireOrders::OnRecord, self, nullptr);
  if (self->rb_ == nullptr) return fail(errno);
  self->stop_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (self->stop_fd_ < 0) return fail(errno);
  // The thread waits on two fds: libbpf's own epoll fd for the ring buffer (epoll nests), and
  // the stop eventfd. libbpf's epoll cannot take the eventfd: it reads each event's data as a
  // ring index.
  self->epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  if (self->epoll_fd_ < 0) return fail(errno);
  struct epoll_event ev = {};
  ev.events = EPOLLIN;
  ev.data.fd = ring->program.bpf->ring_buffer_epoll_fd(self->rb_);
  if (epoll_ctl(self->epoll_fd_, EPOLL_CTL_ADD, ev.data.fd, &ev) != 0) return fail(errno);
  ev.data.fd = self->stop_fd_;
  if (epoll_ctl(self->epoll_fd_, EPOLL_CTL_ADD, self->stop_fd_, &ev) != 0) return fail(errno);
  int e = uv_async_init(loop, &self->async_, &TripwireOrders::OnAsync);
  if (e != 0) return fail(-e);
  self->async_.data = self;
  // Outcomes are for open lines, which hold the loop themselves when they should.
  uv_unref(reinterpret_cast<uv_handle_t*>(&self->async_));
  ring->open_handles++;
  // The thread takes the kill threads' real-time class itself (thread_sched.h).
  self->thread_ = std::thread([self] { self->Run(); });
  return self;
}

uint32_t TripwireOrders::Place(int slot, int kill_fd, const std::string& path, uint64_t expires_ns,
                               const std::string& memory_dir, uint64_t working_set_line, const std::string& tag,
                               int* err) {
  FreshSignal signal;
  int e = signal.Open(memory_dir, working_set_line);
  if (e != 0) {
    close(kill_fd);
    *err = e;
    return 0;
  }
  tripwire_line* l = ring_->Line(slot);
  std::lock_guard<std::mutex> lock(mutex_);
  Entry& entry = entries_[slot];
  if (entry.fd >= 0) close(entry.fd);
  if (++next_generation_ == 0) next_generation_ = 1;  // 0 means "no order" to the program
  entry.fd = kill_fd;
  entry.generation = next_generation_;
  entry.placed_ns = MonotonicNs();
  entry.path = path;
  entry.signal = std::move(signal);
  entry.tag = tag;
  // Off, then the new order's fields, then its generation: the program never pairs an old
  // generation with a new deadline, or fires the new order on the old one's `order_fired`. A new
  // order starts without bias: each pass's placement re-checks from the line itself.
  __atomic_store_n(&l->order_generation, 0u, __ATOMIC_SEQ_CST);
  __atomic_store_n(&l->order_expires_ns, expires_ns, __ATOMIC_SEQ_CST);
  __atomic_store_n(&l->order_bias_pages, 0ull, __ATOMIC_SEQ_CST);
  __atomic_store_n(&l->order_fired, 0u, __ATOMIC_SEQ_CST);
  __atomic_store_n(&l->order_generation, entry.generation, __ATOMIC_SEQ_CST);
  return entry.generation;
}

void TripwireOrders::Withdraw(int slot) {
  tripwire_line* l = ring_->Line(slot);
  std::lock_guard<std::mutex> lock(mutex_);
  __atomic_store_n(&l->order_generation, 0u, __ATOMIC_SEQ_CST);
  Entry& entry = entries_[slot];
  if (entry.fd >= 0) close(entry.fd);
  entry.fd = -1;
  entry.generation = 0;
  entry.path.clear();
  entry.signal.Close();
}

void TripwireOrders::Stop() {
  uint64_t one = 1;
  if (write(stop_fd_, &one, sizeof one) < 0) {
    // An eventfd write only fails when its counter would overflow: the thread is waking anyway.
  }
  if (thread_.joinable()) thread_.join();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (int slot = 0; slot < TRIPWIRE_MAX_LINES; slot++) {
      __atomic_store_n(&ring_->Line(slot)->order_generation, 0u, __ATOMIC_SEQ_CST);
      if (entries_[slot].fd >= 0) close(entries_[slot].fd);
      entries_[slot].fd = -1;
      entries_[slot].generation = 0;
      entries_[slot].signal.Close();
    }
    outcomes_.clear();
  }
  ring_->program.bpf->ring_buffer_free(rb_);
  rb_ = nullptr;
  close(epoll_fd_);
  close(stop_fd_);
  epoll_fd_ = stop_fd_ = -1;
  async_.data = ring_;
  uv_close(reinterpret_cast<uv_handle_t*>(&async_), &TripwireRing::OnHandleClosed);
}

// The order thread: waits for orders and the stop signal, nothing else.
void TripwireOrders::Run() {
  // Named so that the kernel's signal_generate trace (the race's clock) names the kill's sender.
  pthread_setname_np(pthread_self(), "evictd-order");
  KillThreadSched sched;
  struct epoll_event events[2];
  for (;;) {
    sched.Sync();
    int n = epoll_wait(epoll_fd_, events, 2, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;
    }
    for (int i = 0; i < n; i++) {
      if (events[i].data.fd == stop_fd_) return;
    }
    ring_->program.bpf->ring_buffer_consume(rb_);
  }
}

// On the order thread, inside ring_buffer__consume: the fresh check and the kill first,
// everything else after.
int TripwireOrders::OnRecord(void* ctx, void* record, size_t size) {
  auto* self = static_cast<TripwireOrders*>(ctx);
  if (size < sizeof(tripwire_order_event)) return 0;
  const auto* e = static_cast<const tripwire_order_event*>(record);
  if (e->slot >= TRIPWIRE_MAX_LINES) return 0;
  tripwire_line* l = self->ring_->Line(static_cast<int>(e->slot));
  OrderOutcome outcome;
  std::string killed_dir;
  {
    std::lock_guard<std::mutex> lock(self->mutex_);
    Entry& entry = self->entries_[e->slot];
    if (entry.fd < 0) {
      // Withdrawn since the program saw the crossing: the program kills nobody, so nobody died.
      self->dropped_.fetch_add(1, std::memory_order_relaxed);
      return 0;
    }
    if (entry.generation != e->order_generation) {
      // Replaced (a pass refreshed it) while the record was in flight: the crossing stands, and
      // the order in force now carries it out. Its use is claimed here so the program does not
      // fire it a second time; if the program has already, its own record follows.
      uint32_t zero = 0;
      if (!__atomic_compare_exchange_n(&l->order_fired, &zero, 1u, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) return 0;
    }
    uint64_t check_start = MonotonicNs();
    int64_t working_set = entry.signal.Read();
    uint64_t check_ns = MonotonicNs() - check_start;
    if (working_set < 0 || static_cast<uint64_t>(working_set) < entry.signal.line_bytes()) {
      self->refused_.fetch_add(1, std::memory_order_relaxed);
      // The program's measure ran ahead of the kubelet's number (or the cgroup is gone): the
      // order stays, and fires again once the measure has moved as far again.
      if (working_set >= 0) {
        uint64_t fresh_pages = static_cast<uint64_t>(working_set) / 4096;
        uint64_t bias = e->usage_pages > fresh_pages ? e->usage_pages - fresh_pages : 0;
        __atomic_store_n(&l->order_bias_pages, bias, __ATOMIC_SEQ_CST);
      }
      if (__atomic_load_n(&l->order_generation, __ATOMIC_SEQ_CST) == entry.generation) {
        __atomic_store_n(&l->order_fired, 0u, __ATOMIC_SEQ_CST);
      }
      return 0;
    }
    // The use on disk first (use_log.h); a failed append does not hold the kill back.
    if (!entry.tag.empty()) outcome.log_error = self->log_->Append(entry.tag);
    ssize_t written = write(entry.fd, "1", 1);
    outcome.killed_ns = MonotonicNs();
    outcome.error = written == 1 ? 0 : (written < 0 ? errno : EIO);
    outcome.slot = static_cast<int>(e->slot);
    outcome.generation = entry.generation;
    outcome.event = *e;
    // In the kubelet's terms: the working set read at the kill, and the line it was past.
    outcome.working_set_bytes = static_cast<uint64_t>(working_set);
    outcome.line_bytes = entry.signal.line_bytes();
    outcome.check_ns = check_ns;
    outcome.placed_ns = entry.placed_ns;
    outcome.path = entry.path;
    if (outcome.error == 0) killed_dir = entry.path.substr(0, entry.path.rfind('/'));
    // One use: the program will not fire this generation again.
    close(entry.fd);
    entry.fd = -1;
    entry.signal.Close();
    self->outcomes_.push_back(outcome);
  }
  self->used_.fetch_add(1, std::memory_order_relaxed);
  uv_async_send(&self->async_);
  // The loop knows; now the pod's memory, on this thread, as the kill lands (reap.h).
  if (!killed_dir.empty() && g_reap_after_kill.load(std::memory_order_relaxed)) {
    NormalPriorityScope normal;  // not at real-time priority (thread_sched.h)
    ReapCgroup(killed_dir);
  }
  return 0;
}

// On the loop: each outcome to its line, whatever became of the order since: the kill is written.
void TripwireOrders::OnAsync(uv_async_t* handle) { static_cast<TripwireOrders*>(handle->data)->Flush(); }

void TripwireOrders::Flush() {
  TripwireOrders* self = this;
  std::deque<OrderOutcome> batch;
  {
    std::lock_guard<std::mutex> lock(self->mutex_);
    batch.swap(self->outcomes_);
  }
  for (const OrderOutcome& outcome : batch) {
    TripwireLine* line = self->ring_->slots[outcome.slot];
    if (line != nullptr) line->OrderFired(outcome);
  }
}

}  // namespace evictd

#endif  // EVICTD_TRIPWIRE
