/**
 * Arms the agent's crash points (src/agent/crash-point.ts) in a process started with
 * `node --require <this file>`: it SIGKILLs itself at the point EVICTD_CRASH_AT names. Test code
 * only: the shipped files do not include it, so no variable alone can arm a point.
 */
import { CRASH_HOOK, type CrashPoint } from '../../src/agent/crash-point';

const at = process.env.EVICTD_CRASH_AT;
if (at) {
  (globalThis as { [CRASH_HOOK]?: (name: CrashPoint) => void })[CRASH_HOOK] = (name) => {
    if (name === at) process.kill(process.pid, 'SIGKILL');
  };
}

/** The node arguments that load this file. */
export const CRASH_AT_REQUIRE = ['--require', __filename];
