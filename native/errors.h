// Native failures as JS errors shaped like Node's fs errors: message
// "ENOENT: no such file or directory, open '/x'", and the properties code,
// errno (negative, as libuv and Node report it), syscall and path.
#pragma once

#include <napi.h>

#include <string>

namespace evictd {

// `err` is a positive errno value (from errno) or a negative libuv status.
Napi::Error SystemError(Napi::Env env, int err, const char* syscall, const std::string& path);

}  // namespace evictd
