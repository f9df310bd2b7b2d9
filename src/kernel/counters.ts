/**
 * Parses the cgroup and PSI files an event carries into flat counters:
 *   "17301504"                                  -> { [single]: 17301504 }
 *   "populated 1\nfrozen 0" (flat keyed)        -> { populated: 1, frozen: 0 }
 *   "some avg10=0.12 ... total=345\nfull ..."   -> { some_avg10: 0.12, ..., some_total: 345, full_... }
 * Unparsable fields are left out rather than guessed: a counter must be an unsigned integer
 * and a PSI average an unsigned decimal (the kernel prints no signs, exponents or hex), so a
 * negative or garbage value never reaches a caller. "__proto__" is no kernel key: skipped,
 * so no input can change the result's prototype.
 */
const UNSIGNED_DECIMAL = /^\d+(\.\d+)?$/;

function counter(text: string): number | undefined {
  if (!UNSIGNED_DECIMAL.test(text)) return undefined;
  const v = Number(text);
  return Number.isFinite(v) ? v : undefined;
}

export function parseCounters(text: string, single = 'value'): Record<string, number> {
  const counters: Record<string, number> = {};
  for (const line of text.split('\n')) {
    const fields = line
      .trim()
      .split(/\s+/)
      .filter((f) => f !== '');
    if (fields.length === 0) continue;
    if (fields.length === 1) {
      const v = counter(fields[0]);
      if (v !== undefined) counters[single] = v;
      continue;
    }
    if (fields.length === 2 && !fields[1].includes('=')) {
      const v = counter(fields[1]);
      if (v !== undefined && fields[0] !== '__proto__') counters[fields[0]] = v;
      continue;
    }
    const [prefix, ...pairs] = fields;
    for (const pair of pairs) {
      const eq = pair.indexOf('=');
      if (eq <= 0) continue;
      const v = counter(pair.slice(eq + 1));
      const key = `${prefix}_${pair.slice(0, eq)}`;
      if (v !== undefined && key !== '__proto__') counters[key] = v;
    }
  }
  return counters;
}
