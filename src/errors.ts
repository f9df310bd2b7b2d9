/**
 * A problem with what the user gave us (flag, config file, scenario). The CLI prints it as one
 * line on stderr and exits 2, without a stack trace: the message must name the field and value.
 */
export class UsageError extends Error {
  override readonly name = 'UsageError';
  constructor(message: string) {
    super(message);
  }
}

/** Builds the standard "field: value: problem" one-liner. */
export function badValue(field: string, value: unknown, problem: string): UsageError {
  return new UsageError(`${field}: ${JSON.stringify(value)}: ${problem}`);
}
