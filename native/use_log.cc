// The standing orders' use log (use_log.h).
#include "use_log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "clock.h"
#include "fd.h"

namespace evictd {

int UseLog::Open(const std::string& path) {
  int fd = open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return errno;
  int old = fd_.exchange(fd);
  if (old >= 0) close(old);
  return 0;
}

void UseLog::Close() {
  int old = fd_.exchange(-1);
  if (old >= 0) close(old);
}

bool UseLog::ValidTag(const std::string& tag) {
  if (tag.size() > 160) return false;
  for (char c : tag) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
              c == ':' || c == '/' || c == '-';
    if (!ok) return false;
  }
  return true;
}

int UseLog::Append(const std::string& tag) const {
  int fd = fd_.load();
  if (fd < 0) return 0;
  char line[256];
  int len = snprintf(line, sizeof line, "use %s %llu\n", tag.c_str(), static_cast<unsigned long long>(MonotonicNs()));
  if (len <= 0 || static_cast<size_t>(len) >= sizeof line) return EINVAL;
  ssize_t n = WriteRetry(fd, line, static_cast<size_t>(len));
  return n == len ? 0 : (n < 0 ? errno : EIO);
}

}  // namespace evictd
