/** Samples, summaries and the polling model of `evictd bench notify`. */
import fs from 'node:fs';
import { nearestRank, round } from '../../stats';

/** One decimal; NaN (no samples) stays NaN so the table prints '-'. */
const r1 = (x: number): number => round(x) ?? NaN;

export interface Series {
  mechanism: string;
  method: 'measured' | 'modelled';
  /** how the samples were obtained, for the reader */
  how: string;
  latenciesUs: number[];
}

export interface Summary {
  mechanism: string;
  method: string;
  samples: number;
  p50_us: number;
  p90_us: number;
  p99_us: number;
  max_us: number;
  mean_us: number;
  how: string;
}

export function summarize(s: Series): Summary {
  const sorted = [...s.latenciesUs].sort((a, b) => a - b);
  // A mechanism cannot report a crossing before it happened: the stamp is wrong, not the row.
  if (sorted.length > 0 && sorted[0] < 0)
    throw new Error(`bench notify: ${s.mechanism}: negative latency ${sorted[0]} us: the crossing stamp is wrong, refusing to report percentiles`);
  const mean = sorted.reduce((a, b) => a + b, 0) / Math.max(1, sorted.length);
  return {
    mechanism: s.mechanism,
    method: s.method,
    samples: sorted.length,
    p50_us: r1(nearestRank(sorted, 50)),
    p90_us: r1(nearestRank(sorted, 90)),
    p99_us: r1(nearestRank(sorted, 99)),
    max_us: r1(sorted[sorted.length - 1] ?? NaN),
    mean_us: r1(mean),
    how: s.how,
  };
}

export const usOf = (ns: bigint) => Number(ns) / 1000;
/** Median cost of one read of `file`, as a poller does it (µs). */
export function readCostUs(file: string): number {
  const costs: number[] = [];
  for (let i = 0; i < 200; i++) {
    const t0 = process.hrtime.bigint();
    Number(fs.readFileSync(file, 'utf8'));
    costs.push(usOf(process.hrtime.bigint() - t0));
  }
  costs.sort((a, b) => a - b);
  return nearestRank(costs, 50);
}

/** A poller with period P and a uniformly random phase sees a crossing at its next tick. */
export function modelPoll(crossingsNs: bigint[], periodMs: number, readUs: number, random: () => number): number[] {
  const periodNs = periodMs * 1e6;
  return crossingsNs.map((c) => {
    const phase = random() * periodNs;
    const sinceTick = (((Number(c) - phase) % periodNs) + periodNs) % periodNs;
    return (periodNs - sinceTick) / 1000 + readUs;
  });
}

export function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32;
}
