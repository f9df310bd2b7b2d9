#include "sd_notify.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <string>

#include "errors.h"

namespace evictd {

Napi::Value SdNotify(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsString()) throw Napi::TypeError::New(env, "state must be a string");
  std::string state = info[0].As<Napi::String>();
  const char* socket_path = getenv("NOTIFY_SOCKET");
  if (socket_path == nullptr || socket_path[0] == '\0') return Napi::Boolean::New(env, false);
  struct sockaddr_un addr;
  memset(&addr, 0, sizeof(addr));
  addr.sun_family = AF_UNIX;
  size_t len = strlen(socket_path);
  if (len >= sizeof(addr.sun_path)) throw SystemError(env, ENAMETOOLONG, "sendto", socket_path);
  memcpy(addr.sun_path, socket_path, len);
  // "@name" is an abstract socket: its address starts with a NUL byte instead.
  if (addr.sun_path[0] == '@') addr.sun_path[0] = '\0';
  socklen_t addr_len = static_cast<socklen_t>(offsetof(struct sockaddr_un, sun_path) + len);
  int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw SystemError(env, errno, "socket", socket_path);
  ssize_t sent =
      sendto(fd, state.data(), state.size(), MSG_NOSIGNAL, reinterpret_cast<struct sockaddr*>(&addr), addr_len);
  int err = errno;
  close(fd);
  if (sent < 0) throw SystemError(env, err, "sendto", socket_path);
  return Napi::Boolean::New(env, true);
}

}  // namespace evictd
