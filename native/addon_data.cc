// Per-environment state of the addon: its live sources, and the async cleanup hook that keeps
// the environment alive until every uv handle is closed (worker termination, process exit).
#include "tripwire.h"
#include "watcher.h"

namespace evictd {

void AddonData::OnEnvCleanup(napi_async_cleanup_hook_handle handle, void* arg) {
  auto* data = static_cast<AddonData*>(arg);
  data->cleanup_hook = handle;
  data->tearing_down = true;
  if (data->sources.empty() && data->tripwire == nullptr && data->tripwire_closing == 0) {
    napi_remove_async_cleanup_hook(handle);
    data->cleanup_hook = nullptr;
    return;
  }
  // OnClosed erases from `sources`, but only later, from the loop: iterating here is safe.
  for (Source* source : data->sources) Watcher::BeginClose(source);
  TripwireShutdown(data);
}

void AddonData::SourceClosed(Source* source) {
  sources.erase(source);
  if (source->kind == SourceKind::kTripwire) TripwireShutdown(this, /*only_if_idle=*/true);
}

bool AddonData::MaybeDone() {
  if (!sources.empty() || tripwire != nullptr || tripwire_closing > 0) return false;
  if (tearing_down && cleanup_hook != nullptr) {
    napi_remove_async_cleanup_hook(cleanup_hook);
    cleanup_hook = nullptr;
  }
  if (instance_finalized) {
    delete this;
    return true;
  }
  return false;
}

}  // namespace evictd
