/**
 * A recording's times and fields: how a time is written (since the recording's start), and the
 * reader's field checks, each taking the field's path (`line 3.relaxed[0].after.at`) and its
 * value and giving the value or refusing it naming both (exit 2 at the CLI).
 */
import { badValue } from '../errors';
import { formatDuration, parseDuration } from '../policy/duration';

/** A monotonic time as the recording writes it: since its start, never negative (the reader refuses that). */
export const sinceStart = (ns: number | bigint, startNs: number): string => formatDuration(Math.max(0, Number(ns) - startNs));

export const ns = (field: string, v: unknown): number => {
  if (typeof v !== 'string') throw badValue(field, v, 'must be a duration string');
  try {
    return parseDuration(v);
  } catch (e) {
    throw badValue(field, v, (e as Error).message);
  }
};

export const strings = (field: string, v: unknown): string[] => {
  if (v === undefined) return [];
  if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) throw badValue(field, v, 'must be a list of strings');
  return v as string[];
};

export const isMap = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

export function map(field: string, v: unknown, what = 'a map'): Record<string, unknown> {
  if (!isMap(v)) throw badValue(field, v, `must be ${what}`);
  return v;
}

export function list(field: string, v: unknown): unknown[] {
  if (v === undefined) return [];
  if (!Array.isArray(v)) throw badValue(field, v, 'must be a list');
  return v;
}

export function num(field: string, v: unknown): number {
  if (typeof v !== 'number' || !Number.isFinite(v)) throw badValue(field, v, 'must be a number');
  return v;
}

/** A time since the recording's start, or a period: never negative. */
export function since(field: string, v: unknown): number {
  const n = ns(field, v);
  if (n < 0) throw badValue(field, v, 'must not be negative');
  return n;
}

export function numbers(field: string, v: unknown): Record<string, number> {
  if (v === undefined) return {};
  return Object.fromEntries(Object.entries(map(field, v, 'a map of numbers')).map(([k, x]) => [k, num(`${field}.${k}`, x)]));
}

export function count(field: string, v: unknown): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) throw badValue(field, v, 'must be a count (a whole number, 0 or more)');
  return v;
}
