/** The configuration's one error type, apart so that config readers of their own (brake-config.ts) need not import config.ts. */
import { formatValue } from '../errors';

/** Invalid configuration: the message names the field and the value. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  constructor(
    readonly field: string,
    readonly value: unknown,
    readonly problem: string,
  ) {
    super(`${field}: ${formatValue(value)}: ${problem}`);
  }
}
