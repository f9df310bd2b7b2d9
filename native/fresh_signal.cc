// The kubelet's memory signal read fresh (fresh_signal.h).
#include "fresh_signal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <utility>

#include "fd.h"

namespace evictd {

namespace {

// memory.stat is about 1.5 KiB on 6.1 and under 4 KiB on later kernels; it is read whole in one
// pread so that every value comes from one generation of the file.
constexpr size_t kStatBufferSize = 16 * 1024;

int64_t ReadWhole(int fd, char* buffer, size_t size) {
  ssize_t n = PreadRetry(fd, buffer, size - 1, 0);
  if (n < 0) return -1;
  buffer[n] = '\0';
  return n;
}

int OpenRead(const std::string& path) { return open(path.c_str(), O_RDONLY | O_CLOEXEC); }

}  // namespace

FreshSignal& FreshSignal::operator=(FreshSignal&& other) noexcept {
  if (this != &other) {
    Close();
    kind_ = other.kind_;
    usage_fd_ = other.usage_fd_;
    stat_fd_ = other.stat_fd_;
    kmem_fd_ = other.kmem_fd_;
    line_bytes_ = other.line_bytes_;
    other.kind_ = Kind::kNone;
    other.usage_fd_ = other.stat_fd_ = other.kmem_fd_ = -1;
  }
  return *this;
}

int FreshSignal::Open(const std::string& memory_dir, uint64_t line_bytes) {
  Close();
  Fd stat(OpenRead(memory_dir + "/memory.stat"));
  if (!stat.valid()) return errno;
  Kind kind = Kind::kV1;
  Fd usage(OpenRead(memory_dir + "/memory.usage_in_bytes"));
  if (!usage.valid()) {
    kind = Kind::kV2;
    usage = Fd(OpenRead(memory_dir + "/memory.current"));
    // Only the cgroup2 root has memory.stat without memory.current.
    if (!usage.valid()) {
      if (errno != ENOENT) return errno;
      kind = Kind::kV2Root;
    }
  }
  if (kind == Kind::kV1) kmem_fd_ = OpenRead(memory_dir + "/memory.kmem.usage_in_bytes");
  kind_ = kind;
  usage_fd_ = usage.release();
  stat_fd_ = stat.release();
  line_bytes_ = line_bytes;
  return 0;
}

void FreshSignal::Close() {
  if (usage_fd_ >= 0) close(usage_fd_);
  if (stat_fd_ >= 0) close(stat_fd_);
  if (kmem_fd_ >= 0) close(kmem_fd_);
  usage_fd_ = stat_fd_ = kmem_fd_ = -1;
  kind_ = Kind::kNone;
}

int64_t FreshSignal::StatValue(const char* text, const char* key) {
  size_t len = strlen(key);
  for (const char* line = text; *line != '\0';) {
    if (strncmp(line, key, len) == 0 && line[len] == ' ') {
      char* end = nullptr;
      unsigned long long v = strtoull(line + len + 1, &end, 10);
      return end == line + len + 1 ? -1 : static_cast<int64_t>(v);
    }
    const char* next = strchr(line, '\n');
    if (next == nullptr) break;
    line = next + 1;
  }
  return -1;
}

int64_t FreshSignal::BeyondSlack(int64_t unlisted) {
  static const int64_t slack = [] {
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    return static_cast<int64_t>(cpus > 0 ? cpus : 1) * 512 * 1024;
  }();
  return unlisted > slack ? unlisted - slack : 0;
}

int64_t FreshSignal::StatSum(const char* text, const char* const* keys) {
  int64_t sum = 0;
  for (; *keys != nullptr; ++keys) {
    int64_t v = StatValue(text, *keys);
    if (v > 0) sum += v;
  }
  return sum;
}

int64_t FreshSignal::Read(int64_t* inactive_bytes, int64_t* unlisted_bytes) {
  if (kind_ == Kind::kNone) return -1;
  char stat[kStatBufferSize];
  int64_t usage = -1;
  int64_t kernel = 0;
  if (kind_ == Kind::kV2Root) {
    if (ReadWhole(stat_fd_, stat, sizeof stat) <= 0) return -1;
    int64_t anon = StatValue(stat, "anon");
    int64_t file = StatValue(stat, "file");
    if (anon < 0 || file < 0) return -1;
    usage = anon + file;
  } else {
    // Usage is read on both sides of the statistics and the lower value kept: whatever moved in
    // between (page cache added, which raises inactive_file; inactive pages reclaimed, which
    // lowers both), the working set computed is never above what it was at some instant of the
    // read. A race here can spare a pod for one more read, never kill one early.
    int64_t before = ReadUsage();
    if (before < 0 || ReadWhole(stat_fd_, stat, sizeof stat) <= 0) return -1;
    int64_t after = ReadUsage();
    if (after < 0) return -1;
    usage = before < after ? before : after;
    // The kernel's share, read after the usage: what it charged in between counts as unlisted.
    if (kind_ == Kind::kV1) {
      kernel = kmem_fd_ >= 0 ? ReadFirstNumber(kmem_fd_) : 0;
      if (kernel < 0) kernel = 0;
    } else {
      // "kernel" (6.1+) holds slab, stacks, page tables, percpu and vmalloc; before it, its parts.
      static const char* const kParts[] = {"slab",   "kernel_stack", "pagetables", "sec_pagetables",
                                           "percpu", "vmalloc",      nullptr};
      int64_t total = StatValue(stat, "kernel");
      static const char* const kSock[] = {"sock", nullptr};
      kernel = (total >= 0 ? total : StatSum(stat, kParts)) + StatSum(stat, kSock);
    }
  }
  bool v1 = kind_ == Kind::kV1;
  int64_t inactive = StatValue(stat, v1 ? "total_inactive_file" : "inactive_file");
  if (inactive < 0) return -1;
  int64_t unlisted = 0;
  if (kind_ != Kind::kV2Root) {
    static const char* const kListsV1[] = {"total_inactive_anon", "total_active_anon", "total_inactive_file",
                                           "total_active_file",   "total_unevictable", nullptr};
    static const char* const kListsV2[] = {"inactive_anon", "active_anon", "inactive_file",
                                           "active_file",   "unevictable", nullptr};
    int64_t listed = StatSum(stat, v1 ? kListsV1 : kListsV2) + kernel;
    unlisted = usage > listed ? usage - listed : 0;
  }
  if (inactive_bytes != nullptr) *inactive_bytes = inactive;
  if (unlisted_bytes != nullptr) *unlisted_bytes = unlisted;
  int64_t working_set = inactive < usage ? usage - inactive : 0;
  // Within the kernel's own slack the statistics count as folded: the kubelet's number as it is.
  int64_t beyond = BeyondSlack(unlisted);
  return beyond < working_set ? working_set - beyond : 0;
}

int64_t ReadFirstNumber(int fd) {
  char number[32];
  if (ReadWhole(fd, number, sizeof number) <= 0) return -1;
  char* end = nullptr;
  unsigned long long v = strtoull(number, &end, 10);
  return end == number ? -1 : static_cast<int64_t>(v);
}

int64_t FreshSignal::ReadUsage() { return ReadFirstNumber(usage_fd_); }

}  // namespace evictd
