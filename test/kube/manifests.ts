/** The deploy/ manifests, parsed: one list of objects per file; a YAML error fails the test. */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';

export const deployDir = path.resolve(__dirname, '../../../deploy');

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Doc = any;

export function docs(file: string): Doc[] {
  return YAML.parseAllDocuments(fs.readFileSync(path.join(deployDir, file), 'utf8')).map((d) => {
    assert.equal(d.errors.length, 0, `${file}: ${d.errors.map((e) => e.message).join('; ')}`);
    return d.toJS();
  });
}
