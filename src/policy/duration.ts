/**
 * Go `time.Duration` text: time.ParseDuration and Duration.String, reimplemented from Go's
 * documented behaviour (the kubelet's grace periods and housekeeping intervals use them).
 * Durations are nanoseconds as JS numbers: exact up to 2^53 ns (about 104 days), which covers
 * every eviction setting; the int64 range checks are done exactly, in bigint, as Go does.
 */

export class DurationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DurationError';
  }
}

const UNITS = new Map<string, bigint>([
  ['ns', 1n],
  ['us', 1_000n],
  ['\u00b5s', 1_000n], // U+00B5 micro sign
  ['\u03bcs', 1_000n], // U+03BC Greek small letter mu
  ['ms', 1_000_000n],
  ['s', 1_000_000_000n],
  ['m', 60_000_000_000n],
  ['h', 3_600_000_000_000n],
]);

const TWO63 = 1n << 63n;

/** Go's time-package quoting: printable ASCII as is (with \ and " escaped), other bytes as \xNN. */
function quote(s: string): string {
  let out = '"';
  for (const ch of s) {
    const c = ch.codePointAt(0) ?? 0;
    if (c >= 0x80 || c < 0x20) {
      for (const b of Buffer.from(ch, 'utf8')) out += `\\x${b.toString(16).padStart(2, '0')}`;
    } else {
      out += ch === '"' || ch === '\\' ? `\\${ch}` : ch;
    }
  }
  return `${out}"`;
}

function isDigit(c: string): boolean {
  return c >= '0' && c <= '9';
}

/** time.ParseDuration: "[-+]?([0-9]*(\.[0-9]*)?[a-z]+)+", e.g. "300ms", "-1.5h", "2h45m". */
export function parseDuration(input: string): number {
  const invalid = () => new DurationError(`time: invalid duration ${quote(input)}`);
  let s = String(input);
  let neg = false;
  if (s !== '' && (s[0] === '-' || s[0] === '+')) {
    neg = s[0] === '-';
    s = s.slice(1);
  }
  if (s === '0') return 0;
  if (s === '') throw invalid();

  let total = 0n;
  while (s !== '') {
    if (!(s[0] === '.' || isDigit(s[0]))) throw invalid();

    // integer part; more than 2^63 overflows
    let i = 0;
    let whole = 0n;
    while (i < s.length && isDigit(s[i])) {
      whole = whole * 10n + BigInt(s.charCodeAt(i) - 48);
      if (whole > TWO63) throw invalid();
      i++;
    }
    const pre = i > 0;
    s = s.slice(i);

    // fraction part: digits past int64 precision are consumed but ignored, as in Go
    let frac = 0n;
    let scale = 1;
    let post = false;
    if (s !== '' && s[0] === '.') {
      s = s.slice(1);
      let overflow = false;
      i = 0;
      while (i < s.length && isDigit(s[i])) {
        if (!overflow) {
          const next = frac * 10n + BigInt(s.charCodeAt(i) - 48);
          if (frac > (TWO63 - 1n) / 10n || next > TWO63) {
            overflow = true;
          } else {
            frac = next;
            scale *= 10;
          }
        }
        i++;
      }
      post = i > 0;
      s = s.slice(i);
    }
    if (!pre && !post) throw invalid();

    i = 0;
    while (i < s.length && s[i] !== '.' && !isDigit(s[i])) i++;
    if (i === 0) throw new DurationError(`time: missing unit in duration ${quote(input)}`);
    const name = s.slice(0, i);
    s = s.slice(i);
    const unit = UNITS.get(name);
    if (unit === undefined) {
      throw new DurationError(`time: unknown unit ${quote(name)} in duration ${quote(input)}`);
    }

    if (whole > TWO63 / unit) throw invalid();
    let v = whole * unit;
    if (frac > 0n) {
      // Go computes the fraction in float64, truncated: nanosecond-exact for fractions of hours.
      v += BigInt(Math.trunc(Number(frac) * (Number(unit) / scale)));
      if (v > TWO63) throw invalid();
    }
    total += v;
    if (total > TWO63) throw invalid();
  }
  if (neg) return total === 0n ? 0 : -Number(total); // "-0s" is 0, as in Go's int64, not -0
  if (total > TWO63 - 1n) throw invalid();
  return Number(total);
}

/** "." plus the fraction digits of v / 10^prec without trailing zeros ("" when none), and the quotient. */
function fraction(v: bigint, prec: number): [string, bigint] {
  let digits = '';
  let printed = false;
  for (let i = 0; i < prec; i++) {
    const d = v % 10n;
    printed = printed || d !== 0n;
    if (printed) digits = d.toString() + digits;
    v /= 10n;
  }
  return [printed ? `.${digits}` : '', v];
}

/**
 * Duration.String(): "72h3m0.5s", "1.5s", "100ms", "1.5µs", "0s". A number is truncated to whole
 * nanoseconds; a bigint gives the exact int64 extremes. Both are clamped to Go's int64 range.
 */
export function formatDuration(ns: number | bigint): string {
  let u: bigint;
  if (typeof ns === 'bigint') {
    u = ns;
  } else {
    if (!Number.isFinite(ns)) throw new DurationError(`time: cannot format duration ${String(ns)}`);
    u = BigInt(Math.trunc(ns));
  }
  if (u > TWO63 - 1n) u = TWO63 - 1n;
  if (u < -TWO63) u = -TWO63;
  const neg = u < 0n;
  if (neg) u = -u;
  let out: string;
  if (u < 1_000_000_000n) {
    if (u === 0n) return '0s';
    let unit: string;
    let prec: number;
    if (u < 1_000n) {
      unit = 'ns';
      prec = 0;
    } else if (u < 1_000_000n) {
      unit = '\u00b5s';
      prec = 3;
    } else {
      unit = 'ms';
      prec = 6;
    }
    const [frac, whole] = fraction(u, prec);
    out = `${whole}${frac}${unit}`;
  } else {
    const [frac, secs] = fraction(u, 9);
    out = `${secs % 60n}${frac}s`;
    const mins = secs / 60n;
    if (mins > 0n) {
      out = `${mins % 60n}m${out}`;
      const hours = mins / 60n;
      if (hours > 0n) out = `${hours}h${out}`;
    }
  }
  return neg ? `-${out}` : out;
}
