/** Small helpers for the subcommands that read their flags by hand. */
import { badValue, UsageError } from '../errors';

/**
 * Calls `on(flag, value)` for each argument, with `--flag=value` and `--flag value` both
 * accepted: `value()` takes the inline part or the next argument, and refuses a missing one.
 */
export function eachFlag(argv: readonly string[], on: (flag: string, value: () => string, raw: string) => void): void {
  for (let i = 0; i < argv.length; i++) {
    const raw = argv[i];
    const eq = raw.indexOf('=');
    const flag = eq > 0 ? raw.slice(0, eq) : raw;
    const inline = eq > 0 ? raw.slice(eq + 1) : undefined;
    on(
      flag,
      () => {
        const v = inline ?? argv[++i];
        if (v === undefined) throw new UsageError(`${flag}: needs a value`);
        return v;
      },
      raw,
    );
  }
}

/** A comma-separated list of whole MiB/s ramp rates (1 to 10000). */
export function parseRates(flag: string, text: string): number[] {
  const rates = text.split(',').map((x) => Number(x.trim()));
  if (rates.length === 0 || rates.some((r) => !Number.isInteger(r) || r <= 0 || r > 10_000))
    throw badValue(flag, text, 'must be whole MiB/s values between 1 and 10000, comma separated');
  return rates;
}

/** A whole number from `min` to `max`, or a refusal naming the flag and the value. */
export function parseWhole(flag: string, text: string, min: number, max: number): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < min || n > max) throw badValue(flag, text, `must be a whole number from ${min} to ${max}`);
  return n;
}
