/**
 * A NotificationPort for unit tests: memory lines on named "cgroups" whose usage the test sets.
 * A line crossed upward wakes its callback once per crossing (on a later tick, as the kernel's
 * does), `rearm` moves it, `close` ends it. test/support/notification-contract.ts holds the
 * expectations this fake and the real port (test/kernel/notification-contract.test.ts) share.
 */
import type { NotificationPort, ThresholdHandle, WatchCallbacks, WatchHandle } from '../../src/agent/ports';

interface Line {
  dir: string;
  bytes: number;
  cb: WatchCallbacks;
  closed: boolean;
  above: boolean;
}

export class FakeNotifications implements NotificationPort {
  readonly mechanism = 'polling' as const;
  /** every line as created: the cgroup dir and the bytes it was armed at */
  readonly created: { dir: string; bytes: number }[] = [];
  /** what each line says watches it (the arming moves a v1 eventfd line less eagerly) */
  lineMechanism = 'memcg-threshold-eventfd';
  /** every rearm, in bytes */
  readonly rearms: number[] = [];
  private readonly usage = new Map<string, number>();
  private readonly lines: Line[] = [];

  /** Sets a cgroup's usage; every open line it crosses upward wakes. */
  setUsage(dir: string, bytes: number): void {
    this.usage.set(dir, bytes);
    for (const l of this.lines) if (l.dir === dir) this.check(l);
  }

  private check(l: Line): void {
    const above = (this.usage.get(l.dir) ?? 0) >= l.bytes;
    if (above && !l.above && !l.closed) {
      const at = process.hrtime.bigint();
      setImmediate(() => {
        if (!l.closed) l.cb.onWakeup({ source: 'fake-threshold', monotonicNs: at, count: 1 });
      });
    }
    l.above = above;
  }

  watchMemoryUsage(dir: string, bytes: number, cb: WatchCallbacks): ThresholdHandle {
    this.created.push({ dir, bytes });
    const line: Line = { dir, bytes, cb, closed: false, above: (this.usage.get(dir) ?? 0) >= bytes };
    this.lines.push(line);
    const rearms = this.rearms;
    const usage = this.usage;
    return {
      mechanism: this.lineMechanism,
      get lineBytes() {
        return line.bytes;
      },
      rearm(b: number) {
        rearms.push(b);
        line.bytes = b;
        line.above = (usage.get(dir) ?? 0) >= b;
      },
      close: async () => {
        line.closed = true;
      },
    };
  }

  watchPsi(_file: string, trigger: { windowUs: number }): WatchHandle & { windowUs: number } {
    // The unprivileged kernel rule: a window is a multiple of 2 s.
    return { windowUs: Math.ceil(trigger.windowUs / 2_000_000) * 2_000_000, close: async () => {} };
  }

  watchFile(): WatchHandle {
    return { close: async () => {} };
  }
}
