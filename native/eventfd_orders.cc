// The standing orders of memcg v1 threshold lines (eventfd_orders.h).
#include "eventfd_orders.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>

#include "addon_data.h"
#include "clock.h"
#include "fd.h"
#include "js_call.h"
#include "order_use.h"
#include "reap.h"
#include "thread_sched.h"

namespace evictd {

namespace {

// The id of the kick eventfd in the epoll set (order ids count up from 1; 0 is the stop).
constexpr uint64_t kKickId = ~0ull;

}  // namespace

EventfdOrders* EventfdOrders::Start(AddonData* data, int* err) {
  auto* self = new EventfdOrders(data);
  auto fail = [&](int e) -> EventfdOrders* {
    *err = e;
    if (self->epoll_fd_ >= 0) close(self->epoll_fd_);
    if (self->stop_fd_ >= 0) close(self->stop_fd_);
    if (self->kick_fd_ >= 0) close(self->kick_fd_);
    delete self;
    return nullptr;
  };
  self->stop_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (self->stop_fd_ < 0) return fail(errno);
  self->epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  if (self->epoll_fd_ < 0) return fail(errno);
  struct epoll_event ev = {};
  ev.events = EPOLLIN;
  ev.data.u64 = 0;  // ids start at 1
  if (epoll_ctl(self->epoll_fd_, EPOLL_CTL_ADD, self->stop_fd_, &ev) != 0) return fail(errno);
  self->kick_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (self->kick_fd_ < 0) return fail(errno);
  ev.data.u64 = kKickId;
  if (epoll_ctl(self->epoll_fd_, EPOLL_CTL_ADD, self->kick_fd_, &ev) != 0) return fail(errno);
  uv_loop_t* loop = nullptr;
  if (napi_get_uv_event_loop(data->env, &loop) != napi_ok) return fail(EINVAL);
  int e = uv_async_init(loop, &self->async_, &EventfdOrders::OnAsync);
  if (e != 0) return fail(-e);
  self->async_.data = self;
  // Uses are for open lines, which hold the loop themselves when they should.
  uv_unref(reinterpret_cast<uv_handle_t*>(&self->async_));
  Napi::Env env(data->env);
  self->async_context_ = std::make_unique<Napi::AsyncContext>(env, "evictd:StandingOrder", Napi::Object::New(env));
  // The thread takes the kill threads' real-time class itself (thread_sched.h).
  self->thread_ = std::thread([self] { self->Run(); });
  return self;
}

uint64_t EventfdOrders::Place(const Order& order, Napi::Function on_fired) {
  Entry entry;
  entry.kill_fd = order.kill_fd;
  entry.line_bytes = order.line_bytes;
  entry.expires_ns = order.expires_ns;
  entry.placed_ns = MonotonicNs();
  entry.path = order.path;
  entry.tag = order.tag;
  int signal_err = entry.signal.Open(order.memory_dir, order.working_set_line);
  entry.event_fd = fcntl(order.event_fd, F_DUPFD_CLOEXEC, 0);
  entry.usage_fd = fcntl(order.usage_fd, F_DUPFD_CLOEXEC, 0);
  int err = signal_err != 0 ? signal_err : (entry.event_fd < 0 || entry.usage_fd < 0 ? errno : 0);
  uint64_t id = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (err == 0) {
      id = ++next_id_;
      struct epoll_event ev = {};
      ev.events = EPOLLIN | EPOLLET;
      ev.data.u64 = id;
      if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, entry.event_fd, &ev) != 0) err = errno;
    }
    if (err != 0) {
      CloseEntry(entry);
      errno = err;
      return 0;
    }
    entries_.emplace(id, std::move(entry));
  }
  callbacks_.emplace(id, Napi::Persistent(on_fired));
  // The thread reads the new order's usage now and sets its next read from there.
  uint64_t one = 1;
  if (write(kick_fd_, &one, sizeof one) < 0) {
    // Only an overflowing counter fails: the thread is being kicked anyway.
  }
  return id;
}

void EventfdOrders::Withdraw(uint64_t id) {
  bool fired = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(id);
    if (it == entries_.end()) return;
    fired = it->second.fired;
    CloseEntry(it->second);
    entries_.erase(it);
  }
  // A use written just before the withdrawal is still delivered: its callback stays for it.
  if (!fired) callbacks_.erase(id);
}

// Under mutex_ (or before the entry is shared).
void EventfdOrders::CloseEntry(Entry& entry) {
  if (entry.event_fd >= 0) {
    epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, entry.event_fd, nullptr);
    close(entry.event_fd);
  }
  if (entry.usage_fd >= 0) close(entry.usage_fd);
  if (entry.kill_fd >= 0) close(entry.kill_fd);
  entry.event_fd = entry.usage_fd = entry.kill_fd = -1;
  entry.signal.Close();
}

void EventfdOrders::Stop() {
  uint64_t one = 1;
  if (write(stop_fd_, &one, sizeof one) < 0) {
    // An eventfd write only fails when its counter would overflow: the thread is waking anyway.
  }
  if (thread_.joinable()) thread_.join();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [id, entry] : entries_) CloseEntry(entry);
    entries_.clear();
    outcomes_.clear();
  }
  callbacks_.clear();
  async_context_.reset();
  close(epoll_fd_);
  close(stop_fd_);
  close(kick_fd_);
  epoll_fd_ = stop_fd_ = kick_fd_ = -1;
  uv_close(reinterpret_cast<uv_handle_t*>(&async_), &EventfdOrders::OnClosed);
}

void EventfdOrders::OnClosed(uv_handle_t* handle) {
  auto* self = static_cast<EventfdOrders*>(handle->data);
  AddonData* data = self->data_;
  data->eventfd_orders = nullptr;
  delete self;
  data->MaybeDone();
}

// The order thread: waits for the lines' eventfds, the kick of a placed order, the stop signal,
// and the time of the next due read of an order's usage.
void EventfdOrders::Run() {
  // Named so that a kernel trace of the kill names its sender.
  pthread_setname_np(pthread_self(), "evictd-order");
  KillThreadSched sched;
  struct epoll_event events[16];
  for (;;) {
    sched.Sync();
    bool fired = false;
    int64_t wait_ns = ReadDue(&fired);
    if (fired) uv_async_send(&async_);
    ReapKilled();
    int n = Wait(events, 16, wait_ns);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;
    }
    uint64_t now = MonotonicNs();
    for (int i = 0; i < n; i++) {
      uint64_t id = events[i].data.u64;
      if (id == 0) return;
      if (id == kKickId) {
        uint64_t count;
        if (read(kick_fd_, &count, sizeof count) < 0) {
          // EAGAIN: another wake-up drained it; the reads below run either way.
        }
        continue;
      }
      Woken(id, now);
    }
    ReapKilled();
  }
}

// On the order thread, after the loop was told of the kills: their pods' memory (reap.h).
void EventfdOrders::ReapKilled() {
  std::vector<std::string> dirs;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    dirs.swap(to_reap_);
  }
  if (!g_reap_after_kill.load(std::memory_order_relaxed)) return;
  NormalPriorityScope normal;  // not at real-time priority (thread_sched.h)
  for (const std::string& dir : dirs) ReapCgroup(dir);
}

// epoll_wait for at most `wait_ns` (< 0: until an event), to the microsecond where the kernel has
// epoll_pwait2 (Linux 5.11), else to the millisecond, rounded up.
int EventfdOrders::Wait(struct epoll_event* events, int max, int64_t wait_ns) {
  if (wait_ns < 0) return epoll_wait(epoll_fd_, events, max, -1);
#ifdef SYS_epoll_pwait2
  static bool pwait2 = true;
  if (pwait2) {
    struct timespec ts = {static_cast<time_t>(wait_ns / 1'000'000'000), static_cast<long>(wait_ns % 1'000'000'000)};
    long n = syscall(SYS_epoll_pwait2, epoll_fd_, events, max, &ts, nullptr, 0);
    if (n >= 0 || errno != ENOSYS) return static_cast<int>(n);
    pwait2 = false;
  }
#endif
  return epoll_wait(epoll_fd_, events, max, static_cast<int>((wait_ns + 999'999) / 1'000'000));
}

// On the order thread: reads the usage of every order whose read is due, kills on a crossing
// upwards, and returns the time to the next due read (-1: none in force).
int64_t EventfdOrders::ReadDue(bool* fired) {
  std::lock_guard<std::mutex> lock(mutex_);
  uint64_t now = MonotonicNs();
  uint64_t next = 0;
  for (auto& [id, entry] : entries_) {
    if (entry.fired || entry.kill_fd < 0 || now >= entry.expires_ns) continue;
    if (entry.next_read_ns <= now) {
      int64_t usage = ReadFirstNumber(entry.usage_fd);
      if (usage < 0) {
        entry.next_read_ns = now + UsagePace::kMaxReadNs;
      } else if (static_cast<uint64_t>(usage) < entry.line_bytes) {
        entry.below_seen = true;
        entry.next_read_ns =
            now + entry.pace.NextReadAfterNs(entry.line_bytes - static_cast<uint64_t>(usage), usage, now);
      } else if (entry.below_seen) {
        if (Confirm(id, entry, now)) {
          *fired = true;
          continue;
        }
      } else {
        // Past the usage line since before the order. Page cache can hold usage there with the
        // working set far below the kubelet's line: then the thread's own line moves to where
        // that line is now, and the order watches from below it. Past the kubelet's line too,
        // it is no crossing (the pass that placed it decides): wait for a dip.
        int64_t inactive = 0;
        int64_t working_set = entry.signal.Read(&inactive);
        if (working_set >= 0 && static_cast<uint64_t>(working_set) < entry.signal.line_bytes()) {
          entry.line_bytes = entry.signal.line_bytes() + static_cast<uint64_t>(inactive);
          entry.below_seen = true;
          entry.next_read_ns = now;
        } else {
          entry.next_read_ns = now + UsagePace::kMaxReadNs;
        }
      }
    }
    uint64_t due = entry.next_read_ns < entry.expires_ns ? entry.next_read_ns : entry.expires_ns;
    if (next == 0 || due < next) next = due;
  }
  if (next == 0) return -1;
  return next > now ? static_cast<int64_t>(next - now) : 0;
}

// On the order thread, under mutex_: the usage line is crossed. Kills only when the kubelet's
// working set, read now, is at or past the order's line (eventfd_orders.h); otherwise moves the
// thread's usage line to where that line is now and reads the usage again at once. True when
// the order was spent (the caller wakes the loop).
bool EventfdOrders::Confirm(uint64_t id, Entry& entry, uint64_t woken_ns) {
  int64_t inactive = 0;
  uint64_t check_start = MonotonicNs();
  int64_t working_set = entry.signal.Read(&inactive);
  uint64_t check_ns = MonotonicNs() - check_start;
  if (working_set >= 0 && static_cast<uint64_t>(working_set) >= entry.signal.line_bytes()) {
    return Fire(id, entry, static_cast<uint64_t>(working_set), woken_ns, check_ns);
  }
  if (working_set < 0) {
    // The cgroup's files are gone or unreadable: nothing to decide on, no kill.
    entry.next_read_ns = MonotonicNs() + UsagePace::kMaxReadNs;
    return false;
  }
  refused_.fetch_add(1, std::memory_order_relaxed);
  // Usage is below the moved line (working set < line means usage < line + inactive_file): the
  // next read past it is a new crossing.
  entry.line_bytes = entry.signal.line_bytes() + static_cast<uint64_t>(inactive);
  entry.below_seen = true;
  entry.next_read_ns = MonotonicNs();  // read the usage again at once (0 would mean "no read due")
  return false;
}

// On the order thread, under mutex_: writes the kill and queues its use for the loop. True when
// the order was spent (written or failed), the caller then wakes the loop.
bool EventfdOrders::Fire(uint64_t id, Entry& entry, uint64_t working_set, uint64_t woken_ns, uint64_t check_ns) {
  Outcome outcome;
  OrderUse& use = outcome.use;
  // The use on disk first (use_log.h): a crash from here on still finds it. A failed append does
  // not hold the kill back; the loop is told and says so.
  if (!entry.tag.empty()) use.log_error = data_->use_log.Append(entry.tag);
  ssize_t written = write(entry.kill_fd, "1", 1);
  use.error = written == 1 ? 0 : (written < 0 ? errno : EIO);
  use.killed_ns = MonotonicNs();
  outcome.id = id;
  // In the kubelet's terms: the working set read at the kill, and the line it was past. The
  // wake-up is the earliest this side sees of the crossing: its start and its sight.
  use.usage_bytes = working_set;
  use.line_bytes = entry.signal.line_bytes();
  use.charge_began_ns = woken_ns;
  use.fired_ns = woken_ns;
  use.placed_ns = entry.placed_ns;
  use.check_ns = check_ns;
  outcome.path = entry.path;
  // The kill's path is the pod's cgroup.kill: its directory is what the reap walks (after the
  // lock, in Run: the loop hears of the kill first).
  if (use.error == 0) to_reap_.push_back(entry.path.substr(0, entry.path.rfind('/')));
  // One use: the line keeps its eventfd, the order is spent.
  entry.fired = true;
  close(entry.kill_fd);
  entry.kill_fd = -1;
  outcomes_.push_back(outcome);
  used_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

// On the order thread, woken by a line's eventfd: the kill first, everything else after.
void EventfdOrders::Woken(uint64_t id, uint64_t woken_ns) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(id);
    if (it == entries_.end()) return;  // withdrawn since the wake-up
    Entry& entry = it->second;
    if (entry.fired || entry.kill_fd < 0 || woken_ns >= entry.expires_ns) return;
    // The threshold fires both ways: only a crossing upwards is the line crossed.
    int64_t usage = ReadFirstNumber(entry.usage_fd);
    if (usage < 0) return;
    if (static_cast<uint64_t>(usage) < entry.line_bytes) {
      entry.below_seen = true;
      entry.next_read_ns = 0;  // read again at once: the next due read is set from here
      return;
    }
    if (!Confirm(id, entry, woken_ns)) return;
  }
  uv_async_send(&async_);
}

// On the loop: each use to its callback, whatever became of the order since: the kill is written.
void EventfdOrders::OnAsync(uv_async_t* handle) { static_cast<EventfdOrders*>(handle->data)->Flush(); }

void EventfdOrders::Flush() {
  EventfdOrders* self = this;
  std::deque<Outcome> batch;
  {
    std::lock_guard<std::mutex> lock(self->mutex_);
    batch.swap(self->outcomes_);
  }
  napi_env env = self->data_->env;
  for (const Outcome& o : batch) {
    auto it = self->callbacks_.find(o.id);
    if (it == self->callbacks_.end()) continue;
    Napi::FunctionReference callback = std::move(it->second);
    self->callbacks_.erase(it);
    if (!CanRunJs(env)) continue;
    char text[kOrderUseTextSize];
    size_t len = FormatOrderUse(o.use, text);
    Napi::Env e(env);
    Napi::HandleScope scope(e);
    napi_value args[] = {Napi::String::New(e, text, len), Napi::String::New(e, o.path)};
    CallJs(env, *self->async_context_, e.Global(), callback.Value(), 2, args);
  }
}

}  // namespace evictd
