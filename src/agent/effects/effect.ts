/**
 * The one interface every action of the agent implements: fast kill, CRI stop, node-level
 * reclaim, memory brake, brake release. `run` does it; `rehearse` says what it would do and the
 * outcome to report, touching nothing outside evictd, and is what dry run runs instead
 * (`dryRun` wraps an effect, so no effect branches on dry run itself).
 *
 * A new action is one new class here, one new `Action` in policy/actions.ts, and one case in
 * the actuator.
 */
import type { Logger } from 'pino';

export interface Rehearsal<O> {
  /** the "would ..." log line; null: nothing worth a line (say, a pod already held lower) */
  message: string | null;
  fields: Record<string, unknown>;
  outcome: O;
}

export interface Effect<I, O> {
  run(input: I): Promise<O>;
  rehearse(input: I): Rehearsal<O>;
}

/** The effect as dry run carries it out: the rehearsal, logged. */
export function dryRun<I, O>(effect: Effect<I, O>, logger: Logger): Effect<I, O> {
  return {
    rehearse: (input) => effect.rehearse(input),
    run: (input) => {
      const r = effect.rehearse(input);
      if (r.message !== null) logger.info({ ...r.fields, dryRun: true }, r.message);
      return Promise.resolve(r.outcome);
    },
  };
}
