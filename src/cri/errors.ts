import { status as grpcStatus } from '@grpc/grpc-js';

/**
 * A failed CRI call. `code` is the gRPC status name (UNAVAILABLE, DEADLINE_EXCEEDED,
 * UNIMPLEMENTED, NOT_FOUND, ...), `rpc` the method, `details` the runtime's own text.
 * Callers branch on `code`: UNAVAILABLE means the runtime could not be reached within the
 * deadline (after retries), DEADLINE_EXCEEDED that it did not answer in time.
 */
export class CriError extends Error {
  override readonly name = 'CriError';
  readonly code: string;
  readonly grpcCode: number;
  readonly rpc: string;
  readonly details: string;
  /** How many times the call was sent (idempotent calls are retried while UNAVAILABLE). */
  readonly attempts: number;

  constructor(rpc: string, grpcCode: number, details: string, attempts = 1) {
    const code = statusName(grpcCode);
    super(`CRI ${rpc}: ${code}: ${details}${attempts > 1 ? ` (after ${attempts} attempts)` : ''}`);
    this.code = code;
    this.grpcCode = grpcCode;
    this.rpc = rpc;
    this.details = details;
    this.attempts = attempts;
  }
}

export function statusName(code: number): string {
  return (grpcStatus as unknown as Record<number, string>)[code] ?? `CODE_${code}`;
}

/** Wraps anything thrown by a step of a compound operation into a CriError. */
export function asCriError(rpc: string, err: unknown): CriError {
  if (err instanceof CriError) return err;
  return new CriError(rpc, grpcStatus.UNKNOWN, err instanceof Error ? err.message : String(err));
}
