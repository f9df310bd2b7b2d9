#!/usr/bin/env bash
# Runs COMMAND (the agent suite) with the agent suites' containerd harness up for all of it, so
# that each test file finds it running instead of bringing it up and down itself (about 16 s a
# file in the pure cgroup v2 lab, 2 s on a host). A file still brings it up when it is not
# running (a file run alone), and leaves it as it found it. Not root, or up failing: COMMAND runs
# as it would alone, and the files say why they skip or fail.
#
#   scripts/with-agent-harness.sh COMMAND [ARG...]
#
# The directory and cgroup are test/agent/agent-harness.ts's AGENT_HARNESS_DIR and its cgroup.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
harness() { EVICTD_HARNESS_DIR=/run/evictd-harness-agent EVICTD_HARNESS_CGROUP=/evictd-agent-harness "$here/harness.sh" "$@"; }

started=0
if [[ $(id -u) == 0 ]] && ! harness status >/dev/null 2>&1; then
  if harness up >/dev/null; then started=1; else echo "with-agent-harness: harness up failed; each file tries on its own" >&2; fi
fi
"$@"
rc=$?
if ((started)); then harness down >/dev/null || echo "with-agent-harness: harness down failed" >&2; fi
exit "$rc"
