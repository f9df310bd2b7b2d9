import path from 'node:path';
import { addon } from './addon';
import { NativeBackedWatcher } from './native-watcher';
import type { Watcher, WatchKind } from './types';

/** memory.events (and memory.events.local) report memory events; anything else is cgroup.events. */
export function eventsKind(file: string): WatchKind {
  return path.basename(file).startsWith('memory.events') ? 'memory-events' : 'cgroup-events';
}

/**
 * A cgroup2 events file: cgroup.events (populated, frozen) or memory.events (low, high, max,
 * oom, oom_kill, oom_group_kill). kernfs notifies when its contents change; each event carries
 * the counters read at the event. On hybrid hosts memory.events does not exist (the memory
 * controller is on v1); cgroup.events works in every cgroup2 cgroup.
 */
export function watchCgroupEvents(file: string): Watcher {
  return new NativeBackedWatcher(eventsKind(file), file, (cb, onArmed) => {
    const native = addon().openKernfsFile(file, cb);
    onArmed();
    return native;
  });
}
