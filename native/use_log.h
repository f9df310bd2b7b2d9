// The standing orders' use log: a kill written by an order thread must survive a crash
// of evictd before the JS loop hears of it. The agent opens a file in its state dir
// (setOrderUseLog); before an order thread writes a pod's cgroup.kill it appends one line,
//   "use <tag> <CLOCK_MONOTONIC ns>\n"
// with the tag the agent gave the order, in one write(2) on an O_APPEND fd: a few microseconds on
// the state dir's tmpfs, atomic against the agent's own appends ("done <tag>"). The next start
// reads it beside the orders the agent journaled when it placed them, and finishes every use
// whose eviction was not yet journaled: the sandbox stopped through CRI and the eviction
// reported. The line is written before the kill, so a crash between the two makes the next start
// evict a pod whose kill the thread had decided on numbers past the line: the eviction the kubelet
// would make; never one it would not.
//
// Threads: Open and Close run on the loop thread; Append on the order threads. The fd is swapped
// atomically, and closed only after the swap, at start or teardown, when no order stands.
#pragma once

#include <atomic>
#include <string>

namespace evictd {

class UseLog {
 public:
  ~UseLog() { Close(); }
  // Opens (creating, 0600, never following a link) `path` for appending; 0 or an errno.
  int Open(const std::string& path);
  void Close();
  // On an order thread: appends the use of `tag`; errno when it could not (0 without a log).
  int Append(const std::string& tag) const;
  // A tag fits one line and one field: up to 160 of A-Z a-z 0-9 . _ : / - (empty: no tag).
  static bool ValidTag(const std::string& tag);

 private:
  std::atomic<int> fd_{-1};
};

}  // namespace evictd
