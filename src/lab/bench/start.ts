/**
 * How a lab bench begins: its options (null from `parse` means --help: the usage is printed),
 * the harness check (refused with the command's name), and where its progress lines go: stdout,
 * or stderr under --json, whose stdout is the JSON.
 */
import { UsageError } from '../../errors';
import { harnessMissing } from '../harness';

export interface BenchStart<O> {
  o: O;
  log: (line: string) => void;
}

export function benchStart<O extends { json: boolean }>(
  argv: string[],
  command: string,
  parse: (argv: string[]) => O | null,
  usage: string,
): BenchStart<O> | null {
  const o = parse(argv);
  if (!o) {
    process.stdout.write(usage + '\n');
    return null;
  }
  const missing = harnessMissing();
  if (missing) throw new UsageError(`${command}: ${missing}`);
  return { o, log: (line) => void (o.json ? process.stderr : process.stdout).write(line + '\n') };
}
