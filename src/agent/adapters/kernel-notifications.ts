/**
 * The agent's NotificationPort over src/kernel (the addon and its polling fallback).
 * Watchers are unref'd: the agent's own server and timers decide the process lifetime.
 */
import type { Logger } from 'pino';
import {
  flushOrderUses,
  setOrderUseLog,
  nativeAvailable,
  nativeLoadError,
  watchEventsFile,
  watchOom,
  watchPsi,
  watchUsageThreshold,
  watchWorkingSetThreshold,
} from '../../kernel';
import type { KernelEvent, LinePreference, OrderEvent, ThresholdWatcher, Watcher } from '../../kernel';
import type { NotificationPort, StandingOrder, ThresholdHandle, WatchCallbacks, WatchHandle } from '../ports';

function bind(w: Watcher, cb: WatchCallbacks): void {
  w.on('event', (e: KernelEvent) => cb.onWakeup({ source: e.kind, monotonicNs: e.monotonicNs, count: e.count }));
  w.on('error', (err: Error) => cb.onError(err));
  w.unref();
}

function handle(w: ThresholdWatcher, cb: WatchCallbacks): ThresholdHandle {
  bind(w, cb);
  w.on('order', (o: OrderEvent) =>
    cb.onOrderFired?.({
      podCgroupDir: o.podCgroupDir,
      crossedNs: o.chargeBeganNs,
      killedNs: o.killedNs,
      ageMs: Number(o.firedNs - o.placedNs) / 1e6,
      valueBytes: o.usageBytes,
      lineBytes: o.lineBytes,
      unlistedBytes: o.unlistedBytes,
      error: o.errno === 0 ? undefined : `kill write failed: errno ${o.errno}`,
      checkUs: Number(o.checkNs) / 1000,
      ...(o.logErrno !== 0 ? { useLogError: `use log write failed: errno ${o.logErrno}` } : {}),
    }),
  );
  return {
    setOrder: (order: StandingOrder | null) => {
      try {
        return w.setOrder?.(order?.podCgroupDir ?? null, order?.ttlMs, order?.workingSetLineBytes, order?.tag, order?.podMemoryDir) ?? false;
      } catch {
        // The pod's cgroup.kill or the line's memory.stat could not be opened (gone), or the
        // order had no working-set line for a usage line: no order stands.
        return false;
      }
    },
    get lineBytes() {
      return w.thresholdBytes;
    },
    measure: w.measure,
    mechanism: w.lineMechanism,
    rearm: (bytes: number) => {
      // A memcg v1 re-arm completes off the loop. One superseded by a later re-arm (the drift tick
      // moves a usage line again while page cache grows faster than a registration takes) rejects;
      // the later one carries the line and its order. One that fails ends the watch through
      // 'error' (onError above). Either way nothing is left to handle here, and an unhandled
      // rejection would end the agent.
      w.rearm(Math.max(1, Math.round(bytes))).catch(() => undefined);
    },
    close: () => w.close(),
  };
}

/**
 * `lines: 'poll'` puts every memory usage line on the adaptive poller (`evictd run
 * --notifications poll`); PSI triggers and kernfs event files stay kernel notifications, since
 * they load no BPF and cost nothing while idle.
 */
export function kernelNotifications(logger: Logger, pollIntervalMs = 100, lines: LinePreference = 'best'): NotificationPort {
  const native = nativeAvailable();
  if (!native) logger.warn({ err: nativeLoadError() }, 'kernel notification addon unavailable: polling fallback');
  const opts = { intervalMs: pollIntervalMs, log: logger, lines };
  return {
    mechanism: native ? 'native' : 'polling',
    watchMemoryUsage(cgroupDir: string, usageBytes: number, cb: WatchCallbacks): ThresholdHandle {
      return handle(watchUsageThreshold(cgroupDir, Math.max(1, Math.round(usageBytes)), opts), cb);
    },
    watchWorkingSet(cgroupDir: string, workingSetBytes: number, cb: WatchCallbacks): ThresholdHandle | null {
      const w = watchWorkingSetThreshold(cgroupDir, Math.max(1, Math.round(workingSetBytes)), opts);
      return w && handle(w, cb);
    },
    watchPsi(pressureFile, trigger, cb) {
      const w = watchPsi(pressureFile, trigger);
      bind(w, cb);
      return { windowUs: w.windowUs, close: () => w.close() };
    },
    watchFile(file: string, cb: WatchCallbacks): WatchHandle {
      const w = watchEventsFile(file, opts);
      bind(w, cb);
      return { close: () => w.close() };
    },
    watchOom(cgroupDir: string, cb: WatchCallbacks): WatchHandle {
      const w = watchOom(cgroupDir);
      bind(w, cb);
      return { close: () => w.close() };
    },
    flushOrderUses,
    setOrderUseLog,
  };
}
