/**
 * What a lab command started must end with it. A child process does not die with its parent,
 * and a bench's daemons (agents, peers) sit frozen in cgroups between trials: a bench ended by
 * SIGINT or SIGTERM (Ctrl-C, a test's time limit) or by a crash left them running, frozen, on the
 * node the next run measures.
 *
 * - `adoptChild`: a daemon the command spawned; SIGKILLed if it is still running when the
 *   process exits (SIGKILL, because a frozen task acts on nothing else, and one that exits at
 *   once is what a half-ended bench needs; an agent's brake lives in the lab's cgroups, which go
 *   with the lab).
 * - `onInterrupt`: the command's own orderly ending (thaw and stop its contenders, remove its
 *   pods); on the first SIGINT or SIGTERM the registered ones run, last registered first, for
 *   at most CLEANUP_LIMIT_MS in all, then the process exits with 128 + the signal's number. A
 *   second signal kills at once.
 */
import type { ChildProcess } from 'node:child_process';

const CLEANUP_LIMIT_MS = 60_000;
const EXIT_CODES = { SIGINT: 130, SIGTERM: 143 } as const;

const children = new Set<ChildProcess>();
const cleanups = new Set<() => Promise<void>>();
let exitHook = false;
let signalHooks = false;

function killChildren(): void {
  for (const child of children) child.kill('SIGKILL');
  children.clear();
}

export function adoptChild(child: ChildProcess): void {
  children.add(child);
  child.once('exit', () => children.delete(child));
  if (!exitHook) process.once('exit', killChildren);
  exitHook = true;
}

/** Registers an orderly ending for SIGINT and SIGTERM; returns its removal (call it once the command ended in order). */
export function onInterrupt(cleanup: () => Promise<void>): () => void {
  cleanups.add(cleanup);
  if (!signalHooks) {
    for (const signal of Object.keys(EXIT_CODES) as (keyof typeof EXIT_CODES)[]) process.once(signal, () => void interrupted(signal));
    signalHooks = true;
  }
  return () => void cleanups.delete(cleanup);
}

async function interrupted(signal: keyof typeof EXIT_CODES): Promise<void> {
  process.stderr.write(`${signal}: stopping what this command started (at most ${CLEANUP_LIMIT_MS / 1000} s)\n`);
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<void>((resolve) => (timer = setTimeout(resolve, CLEANUP_LIMIT_MS)));
  // Last registered first, as the command would have unwound: its own ending before its session's.
  const inOrder = async (): Promise<void> => {
    for (const c of [...cleanups].reverse()) await c().catch((err: Error) => process.stderr.write(`${signal}: ${err.message}\n`));
  };
  await Promise.race([inOrder(), limit]);
  clearTimeout(timer);
  process.exit(EXIT_CODES[signal]);
}
