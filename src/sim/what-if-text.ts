/**
 * The what-if's answer (what-if.ts) as people read it: each eviction and condition earlier,
 * later or not at all, the admission answers that change, what each setting costs, and the
 * ramps the recording loses before the new line acts.
 */
import type { WhatIfResult } from './what-if';

/** The result as the lines `evictd simulate FILE --eviction-hard ...` prints. */
export function whatIfText(r: WhatIfResult): string {
  const out: string[] = ['evictions:'];
  for (const e of r.evictions) {
    const rec = e.recorded ? `recorded at ${e.recorded.at} (${e.recorded.signal})` : 'not recorded';
    const hyp = e.whatIf
      ? `would be at ${e.whatIf.at} by ${e.whatIf.threshold}${e.whatIf.drawn ? ' (at the line drawn between two passes)' : ''}`
      : 'would not be evicted within the recording';
    out.push(`  ${e.pod}: ${e.change}${e.byMs !== undefined && e.byMs !== 0 ? ` by ${Math.abs(e.byMs)} ms` : ''}: ${rec}; ${hyp}`);
  }
  if (r.evictions.length === 0) out.push('  none either way');
  out.push('conditions:');
  for (const c of r.conditions)
    out.push(
      `  ${c.condition}: ${c.change}${c.byMs ? ` by ${Math.abs(c.byMs)} ms` : ''}: recorded from ${c.recorded ?? 'never'}; would be from ${c.whatIf ?? 'never'}`,
    );
  if (r.conditions.length === 0) out.push('  none either way');
  if (r.admissions.length) {
    out.push('admission answers:');
    for (const a of r.admissions) out.push(`  ${a.pod} at ${a.at}: ${a.recorded}; would be ${a.whatIf}`);
  }
  out.push('cost of each setting:');
  for (const c of r.cost) out.push(`  ${c.threshold}: ${c.pods.join(', ')}`);
  if (r.cost.length === 0) out.push('  no pod');
  if (r.ramps.length) {
    out.push('ramps the recording loses before the new line acts:');
    for (const x of r.ramps) {
      const verdict = x.oomFirst ? 'the kernel OOM killer would have ended it first' : 'the new line acts before memory runs out';
      out.push(
        `  ${x.pod}: ${x.rateMiBs} MiB/s, ${x.availableMiB} MiB available; line ${x.lineMiB ?? 'none'} MiB leaves ${x.marginMs ?? 0} ms, reaction ${x.reactionMs} ms by ${x.by}: ${verdict}`,
      );
    }
  }
  return out.join('\n');
}
