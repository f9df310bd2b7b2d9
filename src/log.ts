/**
 * The one shape of a logger in evictd: pino's call shape, fields first and then the message, at
 * the four levels the product uses. The agent and the CLI hold a pino Logger, which is one; the
 * rooms below take this, so that an embedder or a test can pass any object of this shape. A part
 * that only ever warns asks for `Pick<Log, 'warn'>`.
 */
export interface Log {
  debug(fields: object, message: string): void;
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
}

/** A Log that says nothing: the default where no logger is given. */
export const silentLog: Log = { debug() {}, info() {}, warn() {}, error() {} };
