{
  "targets": [
    {
      "target_name": "evictd_kernel",
      "sources": ["native/addon.cc", "native/watcher.cc", "native/errors.cc", "native/off_loop.cc"],
      "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")"],
      "defines": ["NAPI_VERSION=8", "NAPI_CPP_EXCEPTIONS", "NODE_ADDON_API_DISABLE_DEPRECATED"],
      "cflags!": ["-fno-exceptions"],
      "cflags_cc!": ["-fno-exceptions"],
      "cflags_cc": ["-std=c++17", "-Wall", "-Wextra", "-Wno-unused-parameter"],
      "conditions": [["OS!='linux'", {"type": "none"}]]
    },
    {
      "target_name": "evictd-memhog",
      "type": "executable",
      "sources": ["native/tools/memhog.c"],
      "cflags": ["-O2", "-Wall", "-Wextra"],
      "conditions": [["OS!='linux'", {"type": "none"}]]
    }
  ]
}
