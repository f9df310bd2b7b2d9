{
  "variables": {
    # 1 when clang (BPF target), bpftool, libbpf-dev and a BTF are here (native/bpf/detect.sh,
    # which says once, on stderr, what is missing otherwise).
    "evictd_tripwire%": "<!(sh native/bpf/detect.sh)",
    # 1 in a source checkout: the memhog workload of the kernel tests and benches is left out of
    # the published package (package.json "files"), and so is its target there.
    "evictd_memhog%": "<!(node -p \"require('fs').existsSync('native/tools/memhog.c') ? 1 : 0\")"
  },
  "targets": [
    {
      "target_name": "evictd_kernel",
      "sources": ["native/addon.cc", "native/addon_data.cc", "native/watcher.cc", "native/watcher_methods.cc", "native/eventfd_orders.cc", "native/errors.cc", "native/js_call.cc", "native/off_loop.cc", "native/tripwire.cc", "native/tripwire_line.cc", "native/tripwire_methods.cc", "native/tripwire_orders.cc", "native/sd_notify.cc"],
      "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")", "native"],
      "defines": ["NAPI_VERSION=8", "NAPI_CPP_EXCEPTIONS", "NODE_ADDON_API_DISABLE_DEPRECATED"],
      "cflags!": ["-fno-exceptions"],
      "cflags_cc!": ["-fno-exceptions"],
      "cflags_cc": ["-std=c++17", "-Wall", "-Wextra", "-Wno-unused-parameter"],
      "conditions": [
        ["OS!='linux'", {"type": "none"}],
        ["evictd_tripwire==1", {
          "dependencies": ["evictd_tripwire_skeleton"],
          "defines": ["EVICTD_TRIPWIRE=1"],
          "include_dirs": ["<(SHARED_INTERMEDIATE_DIR)/bpf"],
          "libraries": ["-lbpf"]
        }]
      ]
    },
    {
      # The BPF object and its skeleton header, generated at build time (never committed).
      "target_name": "evictd_tripwire_skeleton",
      "type": "none",
      "conditions": [
        ["evictd_tripwire==1", {
          "actions": [{
            "action_name": "memcg_tripwire_skeleton",
            "inputs": ["native/bpf/memcg_tripwire.bpf.c", "native/bpf/memcg_tripwire.h", "native/bpf/build.sh"],
            "outputs": ["<(SHARED_INTERMEDIATE_DIR)/bpf/memcg_tripwire.skel.h"],
            "action": ["sh", "native/bpf/build.sh", "<(SHARED_INTERMEDIATE_DIR)/bpf"],
            "message": "BPF memcg_tripwire: clang -target bpf, bpftool gen skeleton"
          }]
        }]
      ]
    },
    {
      "target_name": "evictd-memhog",
      "type": "executable",
      "sources": ["native/tools/memhog.c"],
      "cflags": ["-O2", "-Wall", "-Wextra"],
      "conditions": [["OS!='linux' or evictd_memhog==0", {"type": "none", "sources!": ["native/tools/memhog.c"]}]]
    }
  ]
}
