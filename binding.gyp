{
  "variables": {
    # The memcg tripwire (eBPF) is built in on Linux from the committed CO-RE object: no clang,
    # bpftool or libbpf-dev here, libbpf.so.1 opened at run time. EVICTD_TRIPWIRE=0 leaves it out.
    "evictd_tripwire%": "<!(node -p \"process.platform === 'linux' && process.env.EVICTD_TRIPWIRE !== '0' ? 1 : 0\")",
    # 1 in a source checkout: the memhog workload of the kernel tests and benches is left out of
    # the published package (package.json "files"), and so is its target there.
    "evictd_memhog%": "<!(node -p \"require('fs').existsSync('native/tools/memhog.c') ? 1 : 0\")"
  },
  "targets": [
    {
      "target_name": "evictd_kernel",
      "sources": ["native/addon.cc", "native/addon_data.cc", "native/watcher.cc", "native/watcher_methods.cc", "native/order_engine.cc", "native/eventfd_orders.cc", "native/fresh_signal.cc", "native/fold_nudge.cc", "native/use_log.cc", "native/reap.cc", "native/kill_thread.cc", "native/errors.cc", "native/js_call.cc", "native/off_loop.cc", "native/tripwire.cc", "native/tripwire_line.cc", "native/tripwire_methods.cc", "native/tripwire_orders.cc", "native/sd_notify.cc", "native/code_pages.cc", "native/libbpf_api.cc", "native/tripwire_program.cc"],
      "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")", "native"],
      "defines": ["NAPI_VERSION=8", "NAPI_CPP_EXCEPTIONS", "NODE_ADDON_API_DISABLE_DEPRECATED"],
      "cflags!": ["-fno-exceptions"],
      "cflags_cc!": ["-fno-exceptions"],
      "cflags_cc": ["-std=c++17", "-Wall", "-Wextra", "-Wno-unused-parameter"],
      "conditions": [
        ["OS!='linux'", {"type": "none"}],
        ["OS=='linux'", {"libraries": ["-ldl"]}],
        ["evictd_tripwire==1", {
          "defines": ["EVICTD_TRIPWIRE=1"],
          # The committed object, as bytes in a generated source (native/bpf/embed.js).
          "actions": [{
            "action_name": "memcg_tripwire_object",
            "inputs": ["native/bpf/memcg_tripwire.bpf.o", "native/bpf/embed.js"],
            "outputs": ["<(INTERMEDIATE_DIR)/memcg_tripwire_object.cc"],
            "action": ["node", "native/bpf/embed.js", "native/bpf/memcg_tripwire.bpf.o", "<(INTERMEDIATE_DIR)/memcg_tripwire_object.cc"],
            "process_outputs_as_sources": 1,
            "message": "BPF memcg_tripwire: embedding the committed CO-RE object"
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
