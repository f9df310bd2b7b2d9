// Reading a pod's memory.stat files so the kernel folds them (fold_nudge.h).
#include "fold_nudge.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

namespace evictd {

namespace {

// Reads memory.stat in the directory `dir_fd`: the read is the point (the kernel folds, when past
// the threshold, before it formats). True when it was read.
bool ReadStat(int dir_fd) {
  int stat_fd = openat(dir_fd, "memory.stat", O_RDONLY | O_CLOEXEC);
  if (stat_fd < 0) return false;
  char buf[8192];
  while (read(stat_fd, buf, sizeof buf) > 0) {
  }
  close(stat_fd);
  return true;
}

// Reads memory.stat in the directory `dir_fd` (owned; closed here) and below it, depth first,
// while `budget` lasts.
void Walk(int dir_fd, int depth, int* budget, int* read_count) {
  if (*budget <= 0) {
    close(dir_fd);
    return;
  }
  --*budget;
  if (ReadStat(dir_fd)) ++*read_count;
  DIR* d = depth < kFoldNudgeMaxDepth ? fdopendir(dir_fd) : nullptr;
  if (d == nullptr) {
    close(dir_fd);
    return;
  }
  while (struct dirent* e = readdir(d)) {
    if (e->d_type != DT_DIR || e->d_name[0] == '.') continue;
    int child = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (child >= 0) Walk(child, depth + 1, budget, read_count);
    if (*budget <= 0) break;
  }
  closedir(d);  // closes dir_fd too
}

}  // namespace

int NudgeFold(const std::string& pod_dir, const std::string& line_dir_given) {
  if (pod_dir.empty()) return 0;
  std::string line_dir = line_dir_given;
  while (line_dir.size() > 1 && line_dir.back() == '/') line_dir.pop_back();
  int fd = open(pod_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return 0;
  int budget = kFoldNudgeMaxDirs;
  int read_count = 0;
  Walk(fd, 0, &budget, &read_count);
  // The cgroups between the pod and the line (besteffort, kubepods): the line's own is read next
  // by the caller.
  if (line_dir.empty() || pod_dir.size() <= line_dir.size() + 1 || pod_dir.compare(0, line_dir.size(), line_dir) != 0 ||
      pod_dir[line_dir.size()] != '/') {
    return read_count;
  }
  for (size_t end = pod_dir.rfind('/'); end != std::string::npos && end > line_dir.size();
       end = pod_dir.rfind('/', end - 1)) {
    int dir_fd = open(pod_dir.substr(0, end).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd < 0) break;
    if (ReadStat(dir_fd)) ++read_count;
    close(dir_fd);
  }
  return read_count;
}

}  // namespace evictd
