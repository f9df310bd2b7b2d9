#include "off_loop.h"

#include <utility>

namespace evictd {

namespace {

struct OffLoopWork {
  std::function<void()> work;
  std::function<void()> done;
  napi_async_work handle = nullptr;
  bool ran = false;
};

void Execute(napi_env /*env*/, void* arg) {
  auto* w = static_cast<OffLoopWork*>(arg);
  w->work();
  w->ran = true;
}

void Complete(napi_env env, napi_status /*status*/, void* arg) {
  auto* w = static_cast<OffLoopWork*>(arg);
  if (!w->ran) w->work();  // cancelled before it ran
  napi_delete_async_work(env, w->handle);
  std::function<void()> done = std::move(w->done);
  delete w;
  done();
}

}  // namespace

void RunOffLoop(napi_env env, std::function<void()> work, std::function<void()> done) {
  auto* w = new OffLoopWork{std::move(work), std::move(done)};
  napi_handle_scope scope;
  bool queued = false;
  if (napi_open_handle_scope(env, &scope) == napi_ok) {
    napi_value name;
    if (napi_create_string_utf8(env, "evictd:KernelSyscall", NAPI_AUTO_LENGTH, &name) == napi_ok &&
        napi_create_async_work(env, nullptr, name, Execute, Complete, w, &w->handle) == napi_ok) {
      queued = napi_queue_async_work(env, w->handle) == napi_ok;
      if (!queued) napi_delete_async_work(env, w->handle);
    }
    napi_close_handle_scope(env, scope);
  }
  if (!queued) {
    w->work();
    std::function<void()> d = std::move(w->done);
    delete w;
    d();
  }
}

}  // namespace evictd
