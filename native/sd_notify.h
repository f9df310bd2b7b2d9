// systemd's service notification (sd_notify(3)): READY=1, WATCHDOG=1, STOPPING=1 and STATUS=
// lines as one datagram to $NOTIFY_SOCKET. Node has no AF_UNIX datagram socket, so the addon
// sends it; no libsystemd is linked (the protocol is one sendto).
#pragma once

#include <napi.h>

namespace evictd {

// sdNotify(state: string): true when sent, false when $NOTIFY_SOCKET is not set (not run by
// systemd, or a unit of another Type); throws a SystemError when the send fails.
Napi::Value SdNotify(const Napi::CallbackInfo& info);

}  // namespace evictd
