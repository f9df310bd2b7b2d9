#include "addon_data.h"

#include "eventfd_orders.h"
#include "tripwire.h"
#include "watcher.h"

namespace evictd {

AddonData::~AddonData() { delete tripwire; }

void AddonData::OnEnvCleanup(napi_async_cleanup_hook_handle handle, void* arg) {
  auto* data = static_cast<AddonData*>(arg);
  data->cleanup_hook = handle;
  data->tearing_down = true;
  if (data->sources.empty() && data->eventfd_orders == nullptr &&
      (data->tripwire == nullptr || !data->tripwire->Busy())) {
    napi_remove_async_cleanup_hook(handle);
    data->cleanup_hook = nullptr;
    return;
  }
  // Finish erases from `sources`, but only later, from the loop: iterating here is safe.
  for (Source* source : data->sources) Watcher::BeginClose(source);
  if (data->eventfd_orders != nullptr) data->eventfd_orders->Stop();
  if (data->tripwire != nullptr) data->tripwire->Teardown();
}

bool AddonData::MaybeDone() {
  if (!sources.empty() || eventfd_orders != nullptr || (tripwire != nullptr && tripwire->Busy())) return false;
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
