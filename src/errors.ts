/**
 * A problem with what the user gave us (flag, config file, scenario). The CLI prints it as one
 * line on stderr and exits 2, without a stack trace: the message must name the field and value.
 */
export class UsageError extends Error {
  override readonly name = 'UsageError';
  constructor(message: string) {
    super(message);
  }
}

/** Longest value text a one-line message quotes; the rest is elided. */
const MAX_VALUE_CHARS = 80;

/**
 * A user's value as it goes into a one-line message: JSON for plain data, never throwing.
 * YAML aliases can make a value contain itself (`a: &x {b: *x}`), which JSON.stringify refuses
 * with a TypeError; a cycle prints as "[circular]". Long values are cut, and no newline survives.
 */
export function formatValue(value: unknown): string {
  const out: string[] = [];
  let length = 0;
  const emit = (s: string) => {
    out.push(s);
    length += s.length;
  };
  const ancestors: object[] = [];
  const walk = (v: unknown): void => {
    if (length > MAX_VALUE_CHARS) return; // enough to name the value; stop walking big ones
    if (v === null || typeof v === 'boolean' || typeof v === 'string') return emit(JSON.stringify(v));
    if (typeof v === 'number') return emit(Number.isFinite(v) ? JSON.stringify(v) : String(v));
    if (typeof v === 'bigint') return emit(v.toString());
    if (typeof v !== 'object') return emit(String(v));
    if (ancestors.includes(v)) return emit('"[circular]"');
    ancestors.push(v);
    if (Array.isArray(v)) {
      emit('[');
      v.forEach((x, i) => {
        if (i > 0) emit(',');
        walk(x);
      });
      emit(']');
    } else {
      emit('{');
      Object.entries(v).forEach(([k, x], i) => {
        if (i > 0) emit(',');
        emit(`${JSON.stringify(k)}:`);
        walk(x);
      });
      emit('}');
    }
    ancestors.pop();
  };
  walk(value);
  const text = out.join('').replace(/[\r\n\u2028\u2029]+/g, ' ');
  return text.length > MAX_VALUE_CHARS ? `${text.slice(0, MAX_VALUE_CHARS - 3)}...` : text;
}

/**
 * Something this machine lacks or will not give now (a package that cannot be installed, a
 * runtime that does not come up): not the user's input, so exit 1, but still one line that says
 * what and why, never a stack trace.
 */
export class EnvironmentError extends Error {
  override readonly name = 'EnvironmentError';
  constructor(message: string) {
    super(message);
  }
}

/** Builds the standard "field: value: problem" one-liner. */
export function badValue(field: string, value: unknown, problem: string): UsageError {
  return new UsageError(`${field}: ${formatValue(value)}: ${problem}`);
}

/** What a file could not be opened for, in words with the errno's name: "no such file (ENOENT)". */
export function fileProblem(err: unknown): string {
  const code = (err as NodeJS.ErrnoException).code;
  const words = code === undefined ? undefined : FILE_ERRORS[code];
  if (words) return `${words} (${code})`;
  return code ?? (err instanceof Error ? err.message : String(err));
}

const FILE_ERRORS: Record<string, string> = {
  ENOENT: 'no such file',
  EACCES: 'permission denied',
  EPERM: 'not permitted',
  EISDIR: 'a directory, not a file',
  ENOTDIR: 'a path through something that is not a directory',
  ELOOP: 'a loop of symbolic links',
  EROFS: 'a read-only file system',
  ENOSPC: 'no space left on the device',
};

/**
 * The first line of a YAML (or JSON) parse error, and for a key given twice, which key: the
 * parser says only where ("Map keys must be unique at line 5, column 1"), and the kubelet's
 * decoder names it ("mapping key ... already defined").
 */
export function yamlProblem(err: unknown, text: string): string {
  const e = err as { message?: string; code?: string; pos?: [number, number]; linePos?: [{ line: number }] };
  const first = String(e.message ?? err).split('\n')[0]!;
  if (e.code !== 'DUPLICATE_KEY' || !e.pos) return first;
  const rest = text.slice(e.pos[0]);
  const key = /^"((?:[^"\\]|\\.)*)"/.exec(rest)?.[1] ?? /^'([^']*)'/.exec(rest)?.[1] ?? /^([^:\n]*?)\s*:/.exec(rest)?.[1];
  return key === undefined ? first : `key ${JSON.stringify(key)} given twice (line ${e.linePos?.[0].line ?? '?'})`;
}
