// The addon's one fd convention: an owning RAII Fd wherever an fd is opened, released into a
// Source (which closes it in its close path) once the watcher exists; and EINTR-safe syscalls.
#pragma once

#include <errno.h>
#include <sys/epoll.h>
#include <unistd.h>

namespace evictd {

// Owns an fd until released: keeps error paths from leaking.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  Fd(Fd&& other) noexcept : fd_(other.release()) {}
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) {
      reset();
      fd_ = other.release();
    }
    return *this;
  }
  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  // Linux closes the fd even when close() reports EINTR: never retry a close.
  void reset() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

// read/pread/write/epoll_wait restarted on EINTR (a signal handler installed without SA_RESTART, e.g.
// by a profiler or a debugger, interrupts them); every other result is returned as is.
inline ssize_t ReadRetry(int fd, void* buf, size_t len) {
  ssize_t n;
  do n = read(fd, buf, len);
  while (n < 0 && errno == EINTR);
  return n;
}

inline ssize_t PreadRetry(int fd, void* buf, size_t len, off_t off) {
  ssize_t n;
  do n = pread(fd, buf, len, off);
  while (n < 0 && errno == EINTR);
  return n;
}

inline ssize_t WriteRetry(int fd, const void* buf, size_t len) {
  ssize_t n;
  do n = write(fd, buf, len);
  while (n < 0 && errno == EINTR);
  return n;
}

inline int EpollWaitRetry(int epfd, struct epoll_event* events, int max, int timeout_ms) {
  int r;
  do r = epoll_wait(epfd, events, max, timeout_ms);
  while (r < 0 && errno == EINTR);
  return r;
}

}  // namespace evictd
