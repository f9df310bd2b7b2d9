// The standing orders of memcg v1 threshold lines (eventfd_orders.h).
#include "eventfd_orders.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "addon_data.h"
#include "clock.h"
#include "fd.h"
#include "js_call.h"

namespace evictd {

namespace {

// The id of the kick eventfd in the engine's epoll set (order ids count up from 1).
constexpr uint64_t kKickId = ~0ull;
// How soon an order refused for unfolded statistics reads again: each read asks the kernel to
// fold, and one that folds ends the wait; 500 reads a second at most, for up to the kernel's 2 s.
constexpr uint64_t kFoldRetryNs = 2'000'000;

}  // namespace

EventfdOrders::EventfdOrders(AddonData* data) : OrderEngine(&data->use_log), data_(data) {}

EventfdOrders* EventfdOrders::Start(AddonData* data, int* err) {
  auto* self = new EventfdOrders(data);
  uv_loop_t* loop = nullptr;
  int e = napi_get_uv_event_loop(data->env, &loop) == napi_ok ? 0 : EINVAL;
  if (e == 0) e = self->Open(loop, [self](const OrderOutcome& o) { self->Deliver(o); });
  if (e == 0) {
    self->kick_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    e = self->kick_fd_ < 0 ? errno : self->Watch(self->kick_fd_, kKickId, EPOLLIN);
    if (e != 0) {
      if (self->kick_fd_ >= 0) close(self->kick_fd_);
      self->kick_fd_ = -1;
      // The async handle is open: it closes, and deletes the object, as at Stop.
      self->CloseHandle(self, &EventfdOrders::OnClosed);
      *err = e;
      return nullptr;
    }
  }
  if (e != 0) {
    *err = e;
    delete self;
    return nullptr;
  }
  Napi::Env env(data->env);
  self->async_context_ = std::make_unique<Napi::AsyncContext>(env, "evictd:StandingOrder", Napi::Object::New(env));
  self->StartThread();
  return self;
}

uint64_t EventfdOrders::Place(const Order& order, Napi::Function on_fired) {
  Entry entry;
  entry.line_bytes = order.line_bytes;
  entry.expires_ns = order.expires_ns;
  int err = entry.kill.Arm(order.kill_fd, order.path, order.memory_dir, order.working_set_line, order.tag,
                           order.pod_memory_dir);
  entry.event_fd = fcntl(order.event_fd, F_DUPFD_CLOEXEC, 0);
  entry.usage_fd = fcntl(order.usage_fd, F_DUPFD_CLOEXEC, 0);
  if (err == 0 && (entry.event_fd < 0 || entry.usage_fd < 0)) err = errno;
  uint64_t id = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (err == 0) {
      id = ++next_id_;
      err = Watch(entry.event_fd, id, EPOLLIN | EPOLLET);
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
    Unwatch(entry.event_fd);
    close(entry.event_fd);
  }
  if (entry.usage_fd >= 0) close(entry.usage_fd);
  entry.event_fd = entry.usage_fd = -1;
  entry.kill.Disarm();
}

void EventfdOrders::Stop() {
  StopThread();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [id, entry] : entries_) CloseEntry(entry);
    entries_.clear();
  }
  callbacks_.clear();
  async_context_.reset();
  close(kick_fd_);
  kick_fd_ = -1;
  CloseHandle(this, &EventfdOrders::OnClosed);
}

void EventfdOrders::OnClosed(uv_handle_t* handle) {
  auto* self = static_cast<EventfdOrders*>(handle->data);
  AddonData* data = self->data_;
  if (data->eventfd_orders == self) data->eventfd_orders = nullptr;
  delete self;
  data->MaybeDone();
}

// On the order thread: reads the usage of every order whose read is due, kills on a crossing
// upwards, and returns the time to the next due read (-1: none in force).
int64_t EventfdOrders::Due() {
  std::lock_guard<std::mutex> lock(mutex_);
  uint64_t now = MonotonicNs();
  uint64_t next = 0;
  for (auto& [id, entry] : entries_) {
    if (entry.fired || !entry.kill.armed() || now >= entry.expires_ns) continue;
    if (entry.next_read_ns <= now) {
      int64_t usage = ReadFirstNumber(entry.usage_fd);
      if (usage < 0) {
        entry.next_read_ns = now + UsagePace::kMaxReadNs;
      } else if (static_cast<uint64_t>(usage) < entry.line_bytes) {
        entry.below_seen = true;
        entry.awaiting_fold = false;
        entry.next_read_ns =
            now + entry.pace.NextReadAfterNs(entry.line_bytes - static_cast<uint64_t>(usage), usage, now);
      } else if (entry.below_seen) {
        if (Confirm(id, entry, now)) continue;
      } else {
        // Past the usage line since before the order. Page cache can hold usage there with the
        // working set far below the kubelet's line: then the thread's own line moves to where
        // that line is now, and the order watches from below it. Past the kubelet's line too,
        // it is no crossing (the pass that placed it decides): wait for a dip.
        int64_t inactive = 0;
        int64_t working_set = entry.kill.signal.Read(&inactive);
        if (working_set >= 0 && static_cast<uint64_t>(working_set) < entry.kill.signal.line_bytes()) {
          entry.line_bytes = entry.kill.signal.line_bytes() + static_cast<uint64_t>(inactive);
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

// On the order thread, under mutex_: the usage line is crossed. The engine kills only when the
// kubelet's working set, read now, is at or past the order's line (eventfd_orders.h); otherwise
// this moves the thread's usage line to where that line is now and reads the usage again at
// once. True when the order was spent.
bool EventfdOrders::Confirm(uint64_t id, Entry& entry, uint64_t woken_ns) {
  // The wake-up is the earliest this side sees of the crossing: its start and its sight. A read
  // again while the statistics fold answers the crossing that started the wait.
  bool awaiting = entry.awaiting_fold;
  entry.awaiting_fold = false;
  if (!awaiting) entry.crossed_ns = woken_ns;
  OrderUse use;
  use.charge_began_ns = entry.crossed_ns;
  use.fired_ns = entry.crossed_ns;
  int64_t working_set = -1;
  int64_t inactive = 0;
  int64_t unlisted = 0;
  if (KillIfPast(id, 0, entry.kill, use, &working_set, &inactive, &unlisted)) {
    // One use: the line keeps its eventfd, the order is spent.
    entry.fired = true;
    return true;
  }
  if (working_set < 0) {
    // The cgroup's files are gone or unreadable: nothing to decide on, no kill.
    entry.next_read_ns = MonotonicNs() + UsagePace::kMaxReadNs;
    return false;
  }
  if (!awaiting) CountRefused();
  // What the read took out of the kubelet's number: past the line with it, the fold decides.
  int64_t beyond = FreshSignal::BeyondSlack(unlisted);
  if (beyond > 0 && working_set + beyond >= static_cast<int64_t>(entry.kill.signal.line_bytes())) {
    // Past the line only with the usage the statistics have not listed yet (fresh_signal.h):
    // new page cache or new anonymous memory, which the next fold tells apart. The usage line
    // stays; the thread reads again shortly, each read asking the kernel to fold, and the kernel
    // folds on its own within 2 s. Reading the pod's own statistics lets a ramp in the pod fold
    // the line's at once (fold_nudge.h).
    entry.awaiting_fold = true;
    entry.kill.NudgeFoldIfDue(MonotonicNs());
    entry.next_read_ns = MonotonicNs() + kFoldRetryNs;
    return false;
  }
  // Usage is below the moved line (working set < line means usage < line + inactive_file): the
  // next read past it is a new crossing.
  entry.line_bytes = entry.kill.signal.line_bytes() + static_cast<uint64_t>(inactive);
  entry.below_seen = true;
  entry.next_read_ns = MonotonicNs();  // read the usage again at once (0 would mean "no read due")
  return false;
}

// On the order thread, woken by a line's eventfd (or the kick of a placed order): the kill first.
void EventfdOrders::Woken(uint64_t id, uint64_t woken_ns) {
  if (id == kKickId) {
    uint64_t count;
    if (read(kick_fd_, &count, sizeof count) < 0) {
      // EAGAIN: another wake-up drained it; the due reads run either way.
    }
    return;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = entries_.find(id);
  if (it == entries_.end()) return;  // withdrawn since the wake-up
  Entry& entry = it->second;
  if (entry.fired || !entry.kill.armed() || woken_ns >= entry.expires_ns) return;
  // The threshold fires both ways: only a crossing upwards is the line crossed.
  int64_t usage = ReadFirstNumber(entry.usage_fd);
  if (usage < 0) return;
  if (static_cast<uint64_t>(usage) < entry.line_bytes) {
    entry.below_seen = true;
    entry.next_read_ns = 0;  // read again at once: the next due read is set from here
    return;
  }
  Confirm(id, entry, woken_ns);
}

// On the loop: each use to its callback, whatever became of the order since: the kill is written.
void EventfdOrders::Deliver(const OrderOutcome& o) {
  auto it = callbacks_.find(o.key);
  if (it == callbacks_.end()) return;
  Napi::FunctionReference callback = std::move(it->second);
  callbacks_.erase(it);
  napi_env env = data_->env;
  if (!CanRunJs(env)) return;
  char text[kOrderUseTextSize];
  size_t len = FormatOrderUse(o.use, text);
  Napi::Env e(env);
  Napi::HandleScope scope(e);
  napi_value args[] = {Napi::String::New(e, text, len), Napi::String::New(e, o.path)};
  CallJs(env, *async_context_, e.Global(), callback.Value(), 2, args);
}

}  // namespace evictd
