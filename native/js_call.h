// Calling JavaScript from libuv callbacks (a watcher's poll, the tripwire's ring buffer, the
// next-turn work): what the watcher and the tripwire line share. Loop thread only.
#pragma once

#include <node_api.h>

#include <cstddef>

namespace evictd {

// Whether this environment may run JS now. While a worker is being terminated its loop can
// still deliver a poll, but every N-API call that may run JS fails; with C++ exceptions on, a
// failing call aborts the process while it builds its Napi::Error (napi_define_properties
// fails too). So callers that build values first probe with this raw C call, which only
// returns a status. It is on every event's path: keep it as cheap as it is.
bool CanRunJs(napi_env env);

// Calls `fn` on `recv` through MakeCallback, so async hooks see it and microtasks (promise
// reactions in listeners) run when it returns, as for any libuv-driven callback. A listener
// that throws becomes an uncaught exception, as Node does for its own handles; a terminating
// environment makes this a no-op (a status, never an abort).
void CallJs(napi_env env, napi_async_context context, napi_value recv, napi_value fn, size_t argc,
            const napi_value* argv);

}  // namespace evictd
