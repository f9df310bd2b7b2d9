import fs from 'node:fs';
import { parseArgs } from 'node:util';
import YAML from 'yaml';
import { readScenario } from '../sim/scenario';
import { simulate as run } from '../sim/run';
import { UsageError } from '../errors';
import type { Command } from './command';

const HELP = `usage: evictd simulate FILE|-

Runs the eviction policy on a recorded scenario (JSON or YAML; - reads standard input) with a
fake clock, and prints one JSON object per step. The format, its defaults and what is refused
are in docs/scenarios.md (in the evictd repository and package); examples/ has two scenarios
to start from. Exit 0 when the scenario ran; 2 with a one-line message when it or its config
is invalid. A setting the kubelet ignores is ignored here too, with one warning line on
standard error.`;

export const simulate: Command = async (argv) => {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, allowPositionals: true, options: { help: { type: 'boolean', short: 'h' } } });
  } catch (e) {
    throw new UsageError(`simulate: ${(e as Error).message}`);
  }
  if (parsed.values.help) {
    process.stdout.write(HELP + '\n');
    return 0;
  }
  if (parsed.positionals.length !== 1) throw new UsageError('simulate: expected one scenario FILE (or - for standard input)');
  const file = parsed.positionals[0];
  let text: string;
  try {
    text = file === '-' ? fs.readFileSync(0, 'utf8') : fs.readFileSync(file, 'utf8');
  } catch (e) {
    throw new UsageError(`simulate: cannot read ${JSON.stringify(file)}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
  let doc: unknown;
  try {
    doc = YAML.parse(text, { prettyErrors: false });
  } catch (e) {
    throw new UsageError(`simulate: ${JSON.stringify(file)} is neither JSON nor YAML: ${(e as Error).message.split('\n')[0]}`);
  }
  const scenario = readScenario(doc);
  for (const w of scenario.config.warnings) process.stderr.write(`evictd: warning: ${w}\n`);
  const out: string[] = [];
  for (const step of run(scenario)) out.push(JSON.stringify(step));
  process.stdout.write(out.length ? out.join('\n') + '\n' : '');
  return 0;
};
