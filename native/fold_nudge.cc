// Reading a pod's memory.stat files so the kernel folds them (fold_nudge.h).
#include "fold_nudge.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

namespace evictd {

namespace {

// Reads memory.stat in the directory `dir_fd`: the read is the point (the kernel folds, when past
// the threshold, before it formats).
void ReadStat(int dir_fd) {
  int stat_fd = openat(dir_fd, "memory.stat", O_RDONLY | O_CLOEXEC);
  if (stat_fd < 0) return;
  char buf[8192];
  while (read(stat_fd, buf, sizeof buf) > 0) {
  }
  close(stat_fd);
}

// Reads memory.stat in the directory `dir_fd` (owned; closed here) and below it, depth first,
// while `budget` lasts.
void Walk(int dir_fd, int depth, int* budget) {
  if (*budget <= 0) {
    close(dir_fd);
    return;
  }
  --*budget;
  ReadStat(dir_fd);
  DIR* d = depth < kFoldNudgeMaxDepth ? fdopendir(dir_fd) : nullptr;
  if (d == nullptr) {
    close(dir_fd);
    return;
  }
  while (struct dirent* e = readdir(d)) {
    if (e->d_type != DT_DIR || e->d_name[0] == '.') continue;
    int child = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (child >= 0) Walk(child, depth + 1, budget);
    if (*budget <= 0) break;
  }
  closedir(d);  // closes dir_fd too
}

}  // namespace

void NudgeFold(const std::string& pod_dir, const std::string& line_dir_given) {
  if (pod_dir.empty()) return;
  std::string line_dir = line_dir_given;
  while (line_dir.size() > 1 && line_dir.back() == '/') line_dir.pop_back();
  int fd = open(pod_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  int budget = kFoldNudgeMaxDirs;
  Walk(fd, 0, &budget);
  // The cgroups between the pod and the line (besteffort, kubepods): the line's own is read next
  // by the caller.
  if (line_dir.empty() || pod_dir.size() <= line_dir.size() + 1 || pod_dir.compare(0, line_dir.size(), line_dir) != 0 ||
      pod_dir[line_dir.size()] != '/') {
    return;
  }
  for (size_t end = pod_dir.rfind('/'); end != std::string::npos && end > line_dir.size();
       end = pod_dir.rfind('/', end - 1)) {
    int dir_fd = open(pod_dir.substr(0, end).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd < 0) break;
    ReadStat(dir_fd);
    close(dir_fd);
  }
}

}  // namespace evictd
