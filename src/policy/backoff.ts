// Retry delays, one rule for every retry in the agent: double from a first delay up to a cap.
// Retries that a fleet of nodes could make in step (API writes and watches) add jitter.

/** The delay before retry `attempt` (1 for the first): `initialMs` doubling per attempt, at most `maxMs`. */
export function doublingMs(attempt: number, initialMs: number, maxMs: number): number {
  // The exponent is bounded so that a long run of failures stays a finite number (then maxMs).
  return Math.min(maxMs, initialMs * 2 ** Math.min(Math.max(0, attempt - 1), 30));
}

/** doublingMs with +-20% jitter so a fleet of nodes does not retry in step. */
export function backoffMs(attempt: number, initialMs: number, maxMs: number, random: () => number = Math.random): number {
  return Math.round(doublingMs(attempt, initialMs, maxMs) * (0.8 + 0.4 * random()));
}
