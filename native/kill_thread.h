// The JS side of the kill threads' scheduling (thread_sched.h) and of the reap (reap.h).
#pragma once

#include <napi.h>

namespace evictd {

void InitKillThread(Napi::Env env, Napi::Object exports);

}  // namespace evictd
