// Per-environment state of the addon (the main thread and each worker get their own: no process
// globals): the open watcher sources, the tripwire, and the async cleanup hook that keeps the
// environment alive until every uv handle is closed (worker termination, process exit). It is
// only touched on that environment's loop thread.
#pragma once

#include <napi.h>

#include <unordered_set>

#include "use_log.h"

namespace evictd {

struct Source;
class Tripwire;
class EventfdOrders;

struct AddonData {
  napi_env env = nullptr;
  Napi::FunctionReference watcher_constructor;
  std::unordered_set<Source*> sources;
  // The memcg tripwire (tripwire.h), made at init in builds that have it; null otherwise.
  Tripwire* tripwire = nullptr;
  // The standing orders of memcg v1 threshold lines (eventfd_orders.h), started on first use.
  EventfdOrders* eventfd_orders = nullptr;
  // Where the order threads note each use before its kill (use_log.h); closed until the agent opens it.
  UseLog use_log;
  napi_async_cleanup_hook_handle cleanup_hook = nullptr;
  bool tearing_down = false;
  bool instance_finalized = false;

  ~AddonData();

  // Called when the env is torn down: closes every source and the tripwire, and tells Node we
  // are done once the last close callback ran, so a worker's loop never closes with our
  // handles open.
  static void OnEnvCleanup(napi_async_cleanup_hook_handle handle, void* arg);
  // Removes the cleanup hook once nothing is left open (sources, the tripwire's program);
  // deletes this data if the instance was already finalized. Returns true when `this` was
  // deleted.
  bool MaybeDone();
};

}  // namespace evictd
