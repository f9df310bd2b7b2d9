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
// Reading memory.stat also makes the kernel fold its pending per-CPU statistics (v2, and v1 on
// kernels that keep them in rstat), which is what the kubelet's own read gets too.
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

  // The working set now, bytes (-1 when a file cannot be read: the cgroup is gone), and the
  // inactive_file it subtracted through `inactive_bytes` when given.
  int64_t Read(int64_t* inactive_bytes = nullptr);

  // The value of `key` in a memory.stat text ("key value" lines), or -1. For tests and Read.
  static int64_t StatValue(const char* text, const char* key);

 private:
  int64_t ReadUsage();

  Kind kind_ = Kind::kNone;
  int usage_fd_ = -1;
  int stat_fd_ = -1;
  uint64_t line_bytes_ = 0;
};

}  // namespace evictd
