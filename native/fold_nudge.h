// Asking the kernel to fold the memory statistics of a pod and of the cgroups between it and a
// line's cgroup, so that the line's can fold too.
//
// Each memcg counts its own pending statistic updates (since Linux 6.8), and a read of its
// memory.stat folds them only past a threshold (64 pages per online CPU). A charge adds to the
// counts of its memcg and of each ancestor in turn, and in recent kernels stops at the first one
// already past its threshold (mm/memcontrol.c memcg_rstat_updated, "memcg: optimize
// memcg_rstat_updated", 2025: its ancestors are taken to be past theirs too). Seen here, they need
// not be: every cgroup above it then stops counting, reads of the node's memory.stat fold
// nothing, and its statistics stay behind its usage until the kernel's periodic fold (every 2 s),
// or until the cgroup that stops the count is read itself. Measured on 6.18, cgroup v1, the
// agent's layout (node/kubepods/besteffort/pod/container): a 160 MiB anonymous ramp in a
// container left the node's memory.stat up to 167 MiB behind its usage until the periodic fold;
// reading the pod's cgroups alone before each read of the node did not help; reading them and
// besteffort and kubepods kept it within 2.4 MiB.
//
// A read of the cgroup that stops the count folds it and lets the counts above it grow again, so
// the line's next read folds as soon as the charges after it pass the line's threshold (at once
// in a ramp). That is all this does: it reads (and discards) memory.stat in the pod's directory,
// every directory below it (at most kFoldNudgeMaxDirs, kFoldNudgeMaxDepth levels down) and each
// directory between it and the line's.
#pragma once

#include <string>

namespace evictd {

constexpr int kFoldNudgeMaxDirs = 64;
constexpr int kFoldNudgeMaxDepth = 4;

// Reads memory.stat in `pod_dir`, below it, and in each ancestor of it below `line_dir` (none when
// `line_dir` is not an ancestor). Nothing when `pod_dir` is gone.
void NudgeFold(const std::string& pod_dir, const std::string& line_dir);

}  // namespace evictd
