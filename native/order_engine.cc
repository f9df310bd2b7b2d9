// The standing orders' engine (order_engine.h): the thread, the kill, the delivery.
#include "order_engine.h"

#include <errno.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "fold_nudge.h"
#include "reap.h"
#include "thread_sched.h"

namespace evictd {

namespace {

// The stop eventfd's key in the epoll set: sources key theirs from 1.
constexpr uint64_t kStopKey = 0;

}  // namespace

OrderKill& OrderKill::operator=(OrderKill&& other) noexcept {
  if (this != &other) {
    Disarm();
    fd = other.fd;
    other.fd = -1;
    path = std::move(other.path);
    placed_ns = other.placed_ns;
    signal = std::move(other.signal);
    tag = std::move(other.tag);
    fold_dir = std::move(other.fold_dir);
    line_dir = std::move(other.line_dir);
    next_nudge_ns = other.next_nudge_ns;
  }
  return *this;
}

int OrderKill::Arm(int kill_fd, const std::string& kill_path, const std::string& memory_dir, uint64_t working_set_line,
                   const std::string& order_tag, const std::string& pod_memory_dir) {
  Disarm();
  int e = signal.Open(memory_dir, working_set_line);
  if (e != 0) {
    close(kill_fd);
    return e;
  }
  fd = kill_fd;
  path = kill_path;
  placed_ns = MonotonicNs();
  tag = order_tag;
  fold_dir = pod_memory_dir;
  line_dir = memory_dir;
  next_nudge_ns = 0;
  return 0;
}

void OrderKill::NudgeFoldIfDue(uint64_t now_ns) {
  if (fold_dir.empty() || now_ns < next_nudge_ns) return;
  NudgeFold(fold_dir, line_dir);
  // At most a fifth of the thread's time: a pod of many cgroups reads longer.
  uint64_t end = MonotonicNs();
  uint64_t took = end > now_ns ? end - now_ns : 0;
  next_nudge_ns = end + (4 * took > kNudgeEveryNs ? 4 * took : kNudgeEveryNs);
}

void OrderKill::Disarm() {
  if (fd >= 0) close(fd);
  fd = -1;
  signal.Close();
}

int OrderEngine::Open(uv_loop_t* loop, Deliver deliver) {
  auto fail = [this](int e) {
    if (epoll_fd_ >= 0) close(epoll_fd_);
    if (stop_fd_ >= 0) close(stop_fd_);
    epoll_fd_ = stop_fd_ = -1;
    return e;
  };
  stop_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (stop_fd_ < 0) return fail(errno);
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0) return fail(errno);
  if (Watch(stop_fd_, kStopKey, EPOLLIN) != 0) return fail(errno);
  int e = uv_async_init(loop, &async_, &OrderEngine::OnAsync);
  if (e != 0) return fail(-e);
  async_.data = this;
  uv_unref(reinterpret_cast<uv_handle_t*>(&async_));
  deliver_ = std::move(deliver);
  return 0;
}

void OrderEngine::StartThread() {
  thread_ = std::thread([this] { Run(); });
}

int OrderEngine::Watch(int fd, uint64_t key, uint32_t events) {
  struct epoll_event ev = {};
  ev.events = events;
  ev.data.u64 = key;
  return epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) == 0 ? 0 : errno;
}

void OrderEngine::Unwatch(int fd) { epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr); }

void OrderEngine::StopThread() {
  uint64_t one = 1;
  if (write(stop_fd_, &one, sizeof one) < 0) {
    // An eventfd write only fails when its counter would overflow: the thread is waking anyway.
  }
  if (thread_.joinable()) thread_.join();
  std::lock_guard<std::mutex> lock(mutex_);
  outcomes_.clear();
}

void OrderEngine::CloseHandle(void* data, uv_close_cb closed) {
  if (epoll_fd_ >= 0) close(epoll_fd_);
  if (stop_fd_ >= 0) close(stop_fd_);
  epoll_fd_ = stop_fd_ = -1;
  async_.data = data;
  uv_close(reinterpret_cast<uv_handle_t*>(&async_), closed);
}

bool OrderEngine::KillIfPast(uint64_t key, uint32_t generation, OrderKill& kill, OrderUse use, int64_t* working_set,
                             int64_t* inactive, int64_t* unlisted) {
  uint64_t check_start = MonotonicNs();
  int64_t unlisted_bytes = 0;
  *working_set = kill.signal.Read(inactive, &unlisted_bytes);
  if (unlisted != nullptr) *unlisted = unlisted_bytes;
  uint64_t check_ns = MonotonicNs() - check_start;
  if (*working_set < 0 || static_cast<uint64_t>(*working_set) < kill.signal.line_bytes()) return false;
  OrderOutcome outcome;
  outcome.key = key;
  outcome.generation = generation;
  // The use on disk first (use_log.h): a crash from here on still finds it. A failed append does
  // not hold the kill back; the loop is told and says so.
  if (!kill.tag.empty() && log_ != nullptr) use.log_error = log_->Append(kill.tag);
  ssize_t written = write(kill.fd, "1", 1);
  use.killed_ns = MonotonicNs();
  use.error = written == 1 ? 0 : (written < 0 ? errno : EIO);
  // In the kubelet's terms: the working set read at the kill, and the line it was past.
  use.usage_bytes = static_cast<uint64_t>(*working_set);
  use.unlisted_bytes = static_cast<uint64_t>(unlisted_bytes);
  use.line_bytes = kill.signal.line_bytes();
  use.placed_ns = kill.placed_ns;
  use.check_ns = check_ns;
  outcome.use = use;
  outcome.path = kill.path;
  // The kill's file is the pod's cgroup.kill: its directory is what the reap walks, once the
  // loop has been told (Run).
  if (use.error == 0) to_reap_.push_back(kill.path.substr(0, kill.path.rfind('/')));
  // One use: the order is spent.
  kill.Disarm();
  outcomes_.push_back(std::move(outcome));
  used_.fetch_add(1, std::memory_order_relaxed);
  uv_async_send(&async_);
  return true;
}

// The order thread: waits for its source's wake-ups, the stop, and the source's next due look.
void OrderEngine::Run() {
  // Named so that a kernel trace of the kill (signal_generate: the race's clock) names its sender.
  pthread_setname_np(pthread_self(), "evictd-order");
  KillThreadSched sched;
  struct epoll_event events[16];
  for (;;) {
    sched.Sync();
    int64_t wait_ns = Due();
    ReapKilled();
    int n = Wait(events, 16, wait_ns);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;
    }
    uint64_t now = MonotonicNs();
    for (int i = 0; i < n; i++) {
      if (events[i].data.u64 == kStopKey) return;
    }
    for (int i = 0; i < n; i++) Woken(events[i].data.u64, now);
    ReapKilled();
  }
}

// epoll_wait for at most `wait_ns` (< 0: until an event), to the microsecond where the kernel has
// epoll_pwait2 (Linux 5.11), else to the millisecond, rounded up.
int OrderEngine::Wait(struct epoll_event* events, int max, int64_t wait_ns) {
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

// On the order thread, after the loop was told of the kills: their pods' memory (reap.h).
void OrderEngine::ReapKilled() {
  std::vector<std::string> dirs;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    dirs.swap(to_reap_);
  }
  if (dirs.empty() || !g_reap_after_kill.load(std::memory_order_relaxed)) return;
  NormalPriorityScope normal;  // not at real-time priority (thread_sched.h)
  for (const std::string& dir : dirs) ReapCgroup(dir);
}

// On the loop: each use to its source's delivery, whatever became of the order since: the kill
// is written.
void OrderEngine::OnAsync(uv_async_t* handle) { static_cast<OrderEngine*>(handle->data)->Flush(); }

void OrderEngine::Flush() {
  std::deque<OrderOutcome> batch;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    batch.swap(outcomes_);
  }
  for (const OrderOutcome& outcome : batch) deliver_(outcome);
}

}  // namespace evictd
