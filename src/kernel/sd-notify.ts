/**
 * systemd's service notification (sd_notify(3)) for `evictd run` under a unit of Type=notify:
 * READY=1 once the agent runs, WATCHDOG=1 while its loop is alive, STOPPING=1 at stop. Without
 * $NOTIFY_SOCKET (a DaemonSet, a shell) every call is a no-op that returns false.
 */
import { addon } from './addon';

export function sdNotify(state: string): boolean {
  if (!process.env.NOTIFY_SOCKET) return false;
  return addon().sdNotify(state);
}

/**
 * The watchdog interval systemd asks for, in ms (WatchdogSec= through $WATCHDOG_USEC, for this
 * process when $WATCHDOG_PID names it), or null when there is none.
 */
export function watchdogIntervalMs(env: NodeJS.ProcessEnv = process.env, pid: number = process.pid): number | null {
  const usec = Number(env.WATCHDOG_USEC);
  if (!Number.isInteger(usec) || usec <= 0) return null;
  if (env.WATCHDOG_PID !== undefined && Number(env.WATCHDOG_PID) !== pid) return null;
  return usec / 1000;
}
