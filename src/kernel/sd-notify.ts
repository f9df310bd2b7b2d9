/**
 * systemd's service notification (sd_notify(3)) for `evictd run` under a unit of Type=notify:
 * READY=1 once the agent runs, WATCHDOG=1 while its loop is alive, STOPPING=1 at stop. Without
 * $NOTIFY_SOCKET (a DaemonSet, a shell) every call is a no-op that returns null.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { addon, nativeAvailable } from './addon';

/** How a notification left: the addon's own datagram, or systemd-notify(1) where the addon is missing. */
export type NotifiedBy = 'addon' | 'systemd-notify';

/**
 * Sends `state` (newline-separated VARIABLE=VALUE fields). Throws when neither way exists (the
 * addon did not load and no systemd-notify is on PATH). `onFallbackFailed` hears of a
 * systemd-notify that ran and failed (its exit status comes later).
 */
export function sdNotify(state: string, onFallbackFailed?: (why: string) => void, env: NodeJS.ProcessEnv = process.env): NotifiedBy | null {
  if (!env.NOTIFY_SOCKET) return null;
  if (nativeAvailable()) {
    addon().sdNotify(state);
    return 'addon';
  }
  notifyThroughSystemdNotify(state, env, onFallbackFailed);
  return 'systemd-notify';
}

/**
 * Node has no unix datagram socket: without the addon, systemd-notify(1) sends. The sender is not
 * the unit's main process, so the unit needs NotifyAccess=all (deploy/evictd.service has it), and
 * systemd must find the sender still there when it reads the message (it looks up the sender's
 * cgroup by pid): systemd-notify waits for that itself (a BARRIER=1 message, since systemd 246).
 */
function notifyThroughSystemdNotify(state: string, env: NodeJS.ProcessEnv, onFailed?: (why: string) => void): void {
  const tool = onPath('systemd-notify', env.PATH);
  if (tool === null) throw new Error(`systemd-notify not found on PATH (${env.PATH ?? ''})`);
  const child = spawn(tool, state.split('\n'), { stdio: 'ignore', env });
  child.on('error', (err) => onFailed?.(`${tool}: ${err.message}`));
  child.on('exit', (code, signal) => {
    if (code !== 0) onFailed?.(`${tool} exited ${code ?? signal}`);
  });
  child.unref();
}

function onPath(name: string, pathVar: string | undefined): string | null {
  for (const dir of (pathVar ?? '/usr/bin:/bin').split(':')) {
    if (!dir) continue;
    const file = path.join(dir, name);
    try {
      fs.accessSync(file, fs.constants.X_OK);
      return file;
    } catch {
      // not here
    }
  }
  return null;
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
