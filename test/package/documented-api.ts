// The names docs/embedding.md's "What is exported" table promises, read from the doc itself, so
// the doc and the tests that hold the package to it cannot drift apart.
import fs from 'node:fs';
import path from 'node:path';

export const embeddingDoc = path.resolve(__dirname, '..', '..', '..', 'docs', 'embedding.md');

/** The backquoted names of the table's middle column: what `require('evictd')` has, sorted. */
export function documentedNames(doc = fs.readFileSync(embeddingDoc, 'utf8')): string[] {
  const section = /^## What is exported\n([\s\S]*?)^## /m.exec(doc)?.[1];
  if (!section) throw new Error(`${embeddingDoc}: no "## What is exported" section`);
  const names: string[] = [];
  for (const line of section.split('\n')) {
    const cells = line.split('|').map((c) => c.trim());
    // | part | names | what it is for |: cells[0] and cells[4] are the empty ends
    if (cells.length !== 5 || cells[1] === 'part' || /^-+$/.test(cells[1]!)) continue;
    for (const m of cells[2]!.matchAll(/`([A-Za-z_$][\w$]*)`/g)) names.push(m[1]!);
  }
  return [...new Set(names)].sort();
}
