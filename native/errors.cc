#include "errors.h"

#include <uv.h>

namespace evictd {

Napi::Error SystemError(Napi::Env env, int err, const char* syscall, const std::string& path) {
  // libuv statuses are negated errno values on Unix; normalise to the libuv form.
  int uv_err = err > 0 ? -err : err;
  std::string code = uv_err_name(uv_err);
  std::string message = code + ": " + uv_strerror(uv_err) + ", " + syscall;
  if (!path.empty()) message += " '" + path + "'";
  Napi::Error error = Napi::Error::New(env, message);
  Napi::Object obj = error.Value();
  obj.Set("code", Napi::String::New(env, code));
  obj.Set("errno", Napi::Number::New(env, uv_err));
  obj.Set("syscall", Napi::String::New(env, syscall));
  if (!path.empty()) obj.Set("path", Napi::String::New(env, path));
  return error;
}

}  // namespace evictd
