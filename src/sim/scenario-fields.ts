/**
 * The field readers of the scenario file (scenario.ts): each takes the field's path and its
 * value and returns it typed, or throws a UsageError naming the path and the value.
 */
import { badValue } from '../errors';
import { Quantity, QuantityError } from '../policy/quantity';

export type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function obj(field: string, v: unknown): Obj {
  if (!isObj(v)) throw badValue(field, v, 'must be a map');
  return v;
}

/** `field.key`, or `field["key"]` for a key that would not read as one path segment. */
export function child(field: string, key: string): string {
  return /^[A-Za-z_][\w./-]*$/.test(key) ? `${field}.${key}` : `${field}[${JSON.stringify(key)}]`;
}

/** A map with only the given keys: anything else is a typo that would be silently ignored. */
export function fields(field: string, v: unknown, known: readonly string[]): Obj {
  const m = obj(field, v);
  for (const k of Object.keys(m)) if (!known.includes(k)) throw badValue(child(field, k), m[k], `unknown field (known: ${known.join(', ')})`);
  return m;
}

export function list(field: string, v: unknown): unknown[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw badValue(field, v, 'must be a list');
  return v;
}

export function str(field: string, v: unknown): string {
  if (typeof v !== 'string' || v === '') throw badValue(field, v, 'must be a non-empty string');
  return v;
}

/**
 * Amounts past 2^53 - 1 (8 PiB of bytes) are refused: a JS number cannot hold them exactly, and
 * "91e934" would otherwise become Infinity. No node, pod or request comes near it.
 */
export const MAX_AMOUNT = Number.MAX_SAFE_INTEGER;
const MAX_AMOUNT_Q = Quantity.fromNumber(MAX_AMOUNT, 'DecimalSI');

/** A quantity >= 0 and <= MAX_AMOUNT (every amount and resource in a scenario is one). */
export function quantity(field: string, v: unknown): Quantity {
  if (typeof v !== 'string' && typeof v !== 'number') throw badValue(field, v, 'must be a quantity such as "100Mi"');
  let q: Quantity;
  try {
    q = Quantity.parse(v);
  } catch (e) {
    if (e instanceof QuantityError) throw badValue(field, v, e.message);
    throw e;
  }
  if (q.sign() < 0) throw badValue(field, v, 'must not be negative');
  if (q.cmp(MAX_AMOUNT_Q) > 0) throw badValue(field, v, `too large: at most ${MAX_AMOUNT} (2^53-1)`);
  return q;
}

/** A byte or count amount: a quantity rounded up to an integer, as Quantity.Value() does. */
export function amount(field: string, v: unknown): number {
  return quantity(field, v).value();
}

export function optAmount(field: string, v: unknown): number | undefined {
  return v === undefined || v === null ? undefined : amount(field, v);
}

export function integer(field: string, v: unknown, min: number, max: number): number {
  if (typeof v !== 'number' || !Number.isInteger(v)) throw badValue(field, v, 'must be a whole number');
  if (v < min || v > max) throw badValue(field, v, `must be from ${min} to ${max}`);
  return v;
}
