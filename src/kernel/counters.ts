/**
 * Parses the cgroup and PSI files an event carries into flat counters:
 *   "17301504"                                  -> { [single]: 17301504 }
 *   "populated 1\nfrozen 0" (flat keyed)        -> { populated: 1, frozen: 0 }
 *   "some avg10=0.12 ... total=345\nfull ..."   -> { some_avg10: 0.12, ..., some_total: 345, full_... }
 * Unparsable fields are left out rather than guessed.
 */
export function parseCounters(text: string, single = 'value'): Record<string, number> {
  const counters: Record<string, number> = {};
  for (const line of text.split('\n')) {
    const fields = line.trim().split(/\s+/).filter((f) => f !== '');
    if (fields.length === 0) continue;
    if (fields.length === 1) {
      const v = Number(fields[0]);
      if (Number.isFinite(v)) counters[single] = v;
      continue;
    }
    if (fields.length === 2 && !fields[1].includes('=')) {
      const v = Number(fields[1]);
      if (Number.isFinite(v)) counters[fields[0]] = v;
      continue;
    }
    const [prefix, ...pairs] = fields;
    for (const pair of pairs) {
      const eq = pair.indexOf('=');
      if (eq <= 0) continue;
      const v = Number(pair.slice(eq + 1));
      if (Number.isFinite(v)) counters[`${prefix}_${pair.slice(0, eq)}`] = v;
    }
  }
  return counters;
}
