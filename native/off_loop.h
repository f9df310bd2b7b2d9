// Blocking syscalls off the JS thread. On this kernel several cgroup operations wait for an RCU
// or SRCU grace period (tens of ms): a memcg threshold registration (synchronize_rcu in
// mem_cgroup_usage_register_event), closing a PSI trigger (psi_trigger_destroy) or an inotify
// fd (fsnotify group teardown). Those run on the libuv threadpool through napi async work,
// which Node also waits for when it tears an environment (a worker) down.
#pragma once

#include <node_api.h>

#include <functional>

namespace evictd {

// Runs `work` on the threadpool, then `done` on the environment's loop thread. If the work cannot
// be queued (or is cancelled), both run right away on the calling thread, in order.
void RunOffLoop(napi_env env, std::function<void()> work, std::function<void()> done);

}  // namespace evictd
