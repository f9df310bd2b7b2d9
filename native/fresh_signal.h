// The kubelet's memory signal of one line, read fresh at the kill. A standing order's
// mechanism only says a line may be crossed: the v1 threshold compares usage alone, and the BPF
// program's working set uses memcg statistics as the kernel last folded them (up to 2 s old),
// so page cache read since counts as working set there. Before an order thread writes
// cgroup.kill it reads the very files the kubelet's numbers come from, and kills only when the
// working set they give is at or past the line:
//   v1:         memory.usage_in_bytes - memory.stat total_inactive_file (cAdvisor, v1)
//   v2:         memory.current - memory.stat inactive_file (cAdvisor, v2)
//   the v2 root (no memory.current): memory.stat anon + file - inactive_file (runc /
//               opencontainers-cgroups rootStatsFromMeminfo since runc PR #3933, which cAdvisor
//               and so the kubelet use for the node; kubernetes #118916)
// Reading memory.stat asks the kernel to fold its pending per-CPU statistics, but it may not:
// the fold is skipped while another is under way (6.1) or while the cgroup's own count of pending
// updates is under its threshold, which a busy descendant can leave it (fold_nudge.h; seen on 6.18, cgroup v1:
// a node's memory.stat 58-193 MiB behind its usage for up to a second while page cache was
// written, until the kernel's 2 s periodic fold). The usage file is always exact, so page cache
// charged since the last fold is in the usage and not yet in inactive_file: the working set reads
// high, at the very moment a line wakes the thread. So the read also measures what the
// statistics cannot account for, `unlisted`: the usage less every LRU list and the kernel's own
// memory (v1: memory.kmem.usage_in_bytes, a counter as exact as the usage; v2: memory.stat
// kernel and sock), and the working set it returns counts what goes beyond the kernel's own slack
// as inactive page cache, the pod's side. The slack, 512 KiB per online CPU, is what the kernel
// lets its statistics lag by design (a charge batch of 64 pages per CPU in the per-CPU stock, as
// many unfolded updates before a read folds): folded, unlisted is that stock and the LRU batches
// (0.5-2 MiB measured on 2 CPUs); behind, it is what came since the fold. A kill on page cache
// the kernel has not listed yet can then not happen; an anonymous ramp the statistics lag waits
// for the fold (the thread reads again, and reads the pod's statistics first: fold_nudge.h).
//
// Owned by one order thread at a time; no locking of its own.
#pragma once

#include <cstdint>
#include <string>

namespace evictd {

// The first number in the file `fd` reads from offset 0 (memory.usage_in_bytes, memory.current),
// or -1 when it cannot be read or holds no number.
int64_t ReadFirstNumber(int fd);

class FreshSignal {
 public:
  enum class Kind { kNone, kV1, kV2, kV2Root };

  FreshSignal() = default;
  FreshSignal(const FreshSignal&) = delete;
  FreshSignal& operator=(const FreshSignal&) = delete;
  FreshSignal(FreshSignal&& other) noexcept { *this = std::move(other); }
  FreshSignal& operator=(FreshSignal&& other) noexcept;
  ~FreshSignal() { Close(); }

  // Opens the files of `memory_dir` (a memory cgroup directory: v1, v2 or the v2 root, told apart
  // by which usage file it has) for a line at `line_bytes` of working set. Returns 0 or an errno.
  int Open(const std::string& memory_dir, uint64_t line_bytes);
  void Close();
  bool valid() const { return kind_ != Kind::kNone; }
  Kind kind() const { return kind_; }
  uint64_t line_bytes() const { return line_bytes_; }

  // The working set now with the unlisted bytes beyond the slack taken out (never below 0), bytes; -1 when a file
  // cannot be read (the cgroup is gone). Through the pointers when given: the inactive_file it
  // subtracted, and the unlisted bytes (0 on the v2 root, whose usage is memory.stat's own).
  int64_t Read(int64_t* inactive_bytes = nullptr, int64_t* unlisted_bytes = nullptr);

  // The value of `key` in a memory.stat text ("key value" lines), or -1. For tests and Read.
  static int64_t StatValue(const char* text, const char* key);
  // What of `unlisted` goes beyond the slack within which the statistics count as folded (512 KiB
  // per online CPU): what Read takes out of the kubelet's number.
  static int64_t BeyondSlack(int64_t unlisted);
  // The sum of the values of `keys` (a null-terminated list) in `text`, absent ones 0.
  static int64_t StatSum(const char* text, const char* const* keys);

 private:
  int64_t ReadUsage();

  Kind kind_ = Kind::kNone;
  int usage_fd_ = -1;
  int stat_fd_ = -1;
  int kmem_fd_ = -1;  // v1: memory.kmem.usage_in_bytes (-1: absent, its share counts as unlisted)
  uint64_t line_bytes_ = 0;
};

}  // namespace evictd
