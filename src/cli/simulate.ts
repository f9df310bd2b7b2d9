import fs from 'node:fs';
import { parseArgs } from 'node:util';
import YAML from 'yaml';
import { isJSONBuffer, kubeYamlNode } from '../kube/kube-yaml';
import { readScenario } from '../sim/scenario';
import { simulate as run } from '../sim/run';
import { isRecording, readRecording, type Recording } from '../sim/recording-reader';
import { differenceText, replay } from '../sim/replay';
import { whatIf } from '../sim/what-if';
import { whatIfText } from '../sim/what-if-text';
import { ConfigError, compileConfig, configFromFlags, configFromKubeletConfiguration, type EvictionFlags, type PolicyConfig } from '../policy/config';
import { UsageError, badValue, fileProblem, yamlProblem } from '../errors';
import type { Command } from './command';
import { THRESHOLD_FLAGS, configFromFile } from './run-settings';

const isJSON = (text: string): boolean => {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
};

const HELP = `usage: evictd simulate FILE|- [--json] [what-if flags]

Runs the eviction policy on a scenario (JSON or YAML; - reads standard input) with a fake
clock, and prints one JSON object per step. The format, its defaults and what is refused are
in docs/scenarios.md (in the evictd repository and package); examples/ has scenarios to start
from. Exit 0 when the scenario ran; 2 with a one-line message when it or its config is invalid.
A setting the kubelet ignores is ignored here too, with one warning line on standard error.

On a recording (evictd run --record FILE, evictd record FILE), it replays each pass and
compares the decisions with the recorded ones, and decides each recorded admission answer again
on the conditions of the replayed passes before it: exit 0 when every pass and answer matches, 1
with one line per difference (the pass, the signal, the two decisions; an answer's time, pod and
both answers). --json prints the result as one object.

What if (a recording only): the threshold flags and --config of evictd run give another config
(flags over --config, over the recording's own): it prints which evictions and conditions would
have come earlier, later or not at all, what each threshold would have cost, the recorded
admission answers that would change, and the ramps the kernel OOM killer would have ended first.
  --config FILE                             a KubeletConfiguration in place of the recorded config
  --eviction-hard MAP, --eviction-soft MAP, --eviction-soft-grace-period MAP,
  --eviction-max-pod-grace-period SECONDS, --eviction-minimum-reclaim MAP,
  --eviction-pressure-transition-period DURATION, --enforce-node-allocatable LIST
  --json                                    one JSON object`;

/** evictd run's threshold flags, as it reads them. */
const WHAT_IF_FLAGS = THRESHOLD_FLAGS;

function readInput(file: string): string {
  try {
    return file === '-' ? fs.readFileSync(0, 'utf8') : fs.readFileSync(file, 'utf8');
  } catch (e) {
    throw new UsageError(`simulate: cannot read ${JSON.stringify(file)}: ${fileProblem(e)}`);
  }
}

/** The what-if config: the flags over --config, over the recording's own config; null when none is given. */
function hypothetical(values: Record<string, unknown>, rec: Recording): PolicyConfig | null {
  const given = WHAT_IF_FLAGS.filter(([, name]) => values[name] !== undefined);
  if (given.length === 0 && values.config === undefined) return null;
  const flags: EvictionFlags = {};
  // Map flags given twice add up, as evictd run's do.
  for (const [k, name] of given) (flags as Record<string, string>)[k] = (values[name] as string[]).join(',');
  // The recorded period, as a flag: through the config's reader a zero one would become 5m.
  if (flags.evictionPressureTransitionPeriod === undefined && values.config === undefined && rec.header.pressureTransitionPeriod !== undefined)
    flags.evictionPressureTransitionPeriod = rec.header.pressureTransitionPeriod;
  try {
    const base = typeof values.config === 'string' ? configFromFile(values.config) : configFromKubeletConfiguration(rec.header.config, 'recording config.');
    return compileConfig(configFromFlags(flags, base));
  } catch (e) {
    if (e instanceof ConfigError) throw new UsageError(e.message);
    throw e;
  }
}

function recording(text: string, values: Record<string, unknown>): number {
  const rec = readRecording(text);
  for (const w of rec.scenario.config.warnings) process.stderr.write(`evictd: warning: ${w}\n`);
  if (rec.cut)
    process.stderr.write(
      `evictd: warning: the recording's last line is cut (the writer stopped mid-line): replayed up to line ${rec.passes.length + rec.admissions.length + 1}\n`,
    );
  const json = values.json === true;
  const hyp = hypothetical(values, rec);
  if (hyp) {
    const r = whatIf(rec, hyp);
    process.stdout.write((json ? JSON.stringify(r) : whatIfText(r)) + '\n');
    return 0;
  }
  const r = replay(rec);
  if (json) process.stdout.write(JSON.stringify(r) + '\n');
  else {
    const ev = r.replayed.map((e) => `${e.pod} (pass ${e.pass}, ${e.at}, ${e.signal}, ${e.how})`);
    const answers = r.admissions ? ` and ${r.admissions} admission answers` : '';
    process.stdout.write(
      `replayed ${r.passes} passes${answers}: ${r.differences.length === 0 ? 'every decision as recorded' : `${r.differences.length} differences`}; evictions: ${ev.length ? ev.join(', ') : 'none'}\n`,
    );
    for (const d of r.differences) process.stdout.write(differenceText(d) + '\n');
  }
  return r.differences.length === 0 ? 0 : 1;
}

export const simulate: Command = async (argv) => {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        help: { type: 'boolean', short: 'h' },
        json: { type: 'boolean' },
        config: { type: 'string' },
        ...Object.fromEntries(WHAT_IF_FLAGS.map(([, name]) => [name, { type: 'string' as const, multiple: true }])),
      },
    });
  } catch (e) {
    throw new UsageError(`simulate: ${(e as Error).message}`);
  }
  if (parsed.values.help) {
    process.stdout.write(HELP + '\n');
    return 0;
  }
  if (parsed.positionals.length !== 1) throw new UsageError('simulate: expected one scenario FILE (or - for standard input)');
  const file = parsed.positionals[0]!;
  const text = readInput(file);
  // What `--record` leaves when the agent stopped before its first pass (the header goes with
  // the first pass, which observes the filesystem layout): nothing to replay, and nothing wrong.
  if (text.trim() === '') {
    if (parsed.values.json) process.stdout.write(JSON.stringify({ passes: 0, admissions: 0, recorded: [], replayed: [], differences: [] }) + '\n');
    else process.stdout.write(`${file}: empty: no passes recorded (the agent stopped before its first pass)\n`);
    return 0;
  }
  if (isRecording(text)) return recording(text, parsed.values);
  const whatIfFlag = [...WHAT_IF_FLAGS.map(([, n]) => n), 'config', 'json'].find((n) => (parsed.values as Record<string, unknown>)[n] !== undefined);
  if (whatIfFlag) throw badValue(`--${whatIfFlag}`, file, 'works on a recording (evictd run --record); a scenario carries its own config');
  let yamlDoc: YAML.Document.Parsed;
  let doc: unknown;
  try {
    yamlDoc = YAML.parseDocument(text, { prettyErrors: false });
    for (const w of yamlDoc.warnings) process.emitWarning(w); // as YAML.parse does
    if (yamlDoc.errors.length > 0) throw yamlDoc.errors[0];
    doc = yamlDoc.toJS();
  } catch (e) {
    throw new UsageError(`simulate: ${JSON.stringify(file)} is neither JSON nor YAML: ${yamlProblem(e, text)}`);
  }
  // `config` is a KubeletConfiguration: read as the kubelet reads its file (YAML 1.1: `yes` is
  // true, `0777` octal; JSON if the file is), the rest as evictd's own YAML 1.2
  const configNode = YAML.isMap(yamlDoc.contents) ? yamlDoc.contents.get('config', true) : undefined;
  if (configNode !== undefined && doc !== null && typeof doc === 'object' && !Array.isArray(doc)) {
    const json = isJSONBuffer(text) && isJSON(text);
    try {
      (doc as Record<string, unknown>).config = kubeYamlNode(yamlDoc, configNode as YAML.Node, text, json, 'config.');
    } catch (e) {
      if ((e as { code?: string }).code === 'DUPLICATE_KEY')
        throw new UsageError(`simulate: ${JSON.stringify(file)} is neither JSON nor YAML: ${yamlProblem(e, text)}`);
      throw new UsageError(e instanceof Error ? e.message.split('\n')[0]! : String(e));
    }
  }
  const scenario = readScenario(doc);
  for (const w of scenario.config.warnings) process.stderr.write(`evictd: warning: ${w}\n`);
  const out: string[] = [];
  for (const step of run(scenario)) out.push(JSON.stringify(step));
  process.stdout.write(out.length ? out.join('\n') + '\n' : '');
  return 0;
};
