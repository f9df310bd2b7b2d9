// The tripwire's source of standing orders (tripwire_orders.h).
#ifdef EVICTD_TRIPWIRE
#include "tripwire_orders.h"

#include <errno.h>

#include "clock.h"

namespace evictd {

namespace {

// The ring buffer's epoll fd in the engine's epoll set (epoll nests; libbpf's own epoll cannot
// take another fd: it reads each event's data as a ring index).
constexpr uint64_t kRingKey = 1;
constexpr uint64_t kPageBytes = 4096;

}  // namespace

TripwireOrders* TripwireOrders::Start(TripwireProgram* program, uv_loop_t* loop, const UseLog* log, Deliver deliver,
                                      int* err) {
  auto* self = new TripwireOrders(program, log);
  self->rb_ = program->bpf->ring_buffer_new(program->orders_fd, &TripwireOrders::OnRecord, self, nullptr);
  int e = self->rb_ == nullptr ? errno : 0;
  if (e == 0) e = self->Open(loop, std::move(deliver));
  if (e == 0) {
    e = self->Watch(program->bpf->ring_buffer_epoll_fd(self->rb_), kRingKey, EPOLLIN);
    // The async handle is open: it closes, and frees the object, where Stop's caller says.
    if (e != 0) {
      uv_close_cb free_it = [](uv_handle_t* handle) { delete static_cast<TripwireOrders*>(handle->data); };
      self->Stop(self, free_it);
      *err = e;
      return nullptr;
    }
  }
  if (e != 0) {
    *err = e;
    delete self;
    return nullptr;
  }
  self->StartThread();
  return self;
}

TripwireOrders::~TripwireOrders() {
  if (rb_ != nullptr) program_->bpf->ring_buffer_free(rb_);
}

uint32_t TripwireOrders::Place(int slot, int kill_fd, const std::string& path, uint64_t expires_ns,
                               const std::string& memory_dir, uint64_t working_set_line, const std::string& tag,
                               int* err) {
  OrderKill kill;
  // The tripwire is cgroup v2 only: the pod's memory directory is its cgroup.kill's.
  int e = kill.Arm(kill_fd, path, memory_dir, working_set_line, tag, path.substr(0, path.rfind('/')));
  if (e != 0) {
    *err = e;
    return 0;
  }
  tripwire_line* l = Line(slot);
  std::lock_guard<std::mutex> lock(mutex_);
  Entry& entry = entries_[slot];
  if (++next_generation_ == 0) next_generation_ = 1;  // 0 means "no order" to the program
  entry.kill = std::move(kill);
  entry.generation = next_generation_;
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
  tripwire_line* l = Line(slot);
  std::lock_guard<std::mutex> lock(mutex_);
  __atomic_store_n(&l->order_generation, 0u, __ATOMIC_SEQ_CST);
  entries_[slot].kill.Disarm();
  entries_[slot].generation = 0;
}

void TripwireOrders::Stop(void* data, uv_close_cb closed) {
  StopThread();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (int slot = 0; slot < TRIPWIRE_MAX_LINES; slot++) {
      __atomic_store_n(&Line(slot)->order_generation, 0u, __ATOMIC_SEQ_CST);
      entries_[slot].kill.Disarm();
      entries_[slot].generation = 0;
    }
  }
  if (rb_ != nullptr) program_->bpf->ring_buffer_free(rb_);
  rb_ = nullptr;
  CloseHandle(data, closed);
}

// On the order thread: the ring buffer has records (each one goes through OnRecord).
void TripwireOrders::Woken(uint64_t key, uint64_t) {
  if (key == kRingKey) program_->bpf->ring_buffer_consume(rb_);
}

// On the order thread, inside ring_buffer__consume: the fresh check and the kill first,
// everything else after.
int TripwireOrders::OnRecord(void* ctx, void* record, size_t size) {
  auto* self = static_cast<TripwireOrders*>(ctx);
  if (size < sizeof(tripwire_order_event)) return 0;
  const auto* e = static_cast<const tripwire_order_event*>(record);
  if (e->slot >= TRIPWIRE_MAX_LINES) return 0;
  tripwire_line* l = self->Line(static_cast<int>(e->slot));
  std::lock_guard<std::mutex> lock(self->mutex_);
  Entry& entry = self->entries_[e->slot];
  if (!entry.kill.armed()) {
    // Withdrawn since the program saw the crossing: the program kills nobody, so nobody died.
    self->CountDropped();
    return 0;
  }
  if (entry.generation != e->order_generation) {
    // Replaced (a pass refreshed it) while the record was in flight: the crossing stands, and
    // the order in force now carries it out. Its use is claimed here so the program does not
    // fire it a second time; if the program has already, its own record follows.
    uint32_t zero = 0;
    if (!__atomic_compare_exchange_n(&l->order_fired, &zero, 1u, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) return 0;
  }
  // What the program saw: when the charge began, when it crossed, and its counter there.
  OrderUse use;
  use.charge_began_ns = e->began_ns;
  use.fired_ns = e->ktime_ns;
  use.trigger_bytes = static_cast<int64_t>(e->usage_pages * kPageBytes);
  int64_t working_set = -1;
  int64_t unlisted = 0;
  if (self->KillIfPast(e->slot, entry.generation, entry.kill, use, &working_set, nullptr, &unlisted)) {
    // One use: the program will not fire this generation again.
    return 0;
  }
  self->CountRefused();
  // Statistics behind the usage (fresh_signal.h): let them fold before the program fires again.
  if (FreshSignal::BeyondSlack(unlisted) > 0) entry.kill.NudgeFoldIfDue(MonotonicNs());
  // The program's measure ran ahead of the kubelet's number (or the cgroup is gone): the order
  // stays, and fires again once the measure has moved as far again.
  if (working_set >= 0) {
    uint64_t fresh_pages = static_cast<uint64_t>(working_set) / kPageBytes;
    uint64_t bias = e->usage_pages > fresh_pages ? e->usage_pages - fresh_pages : 0;
    __atomic_store_n(&l->order_bias_pages, bias, __ATOMIC_SEQ_CST);
  }
  if (__atomic_load_n(&l->order_generation, __ATOMIC_SEQ_CST) == entry.generation) {
    __atomic_store_n(&l->order_fired, 0u, __ATOMIC_SEQ_CST);
  }
  return 0;
}

}  // namespace evictd

#endif  // EVICTD_TRIPWIRE
