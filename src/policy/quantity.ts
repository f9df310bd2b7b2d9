/**
 * Kubernetes `resource.Quantity` (k8s.io/apimachinery/pkg/api/resource), reimplemented from its
 * documented behaviour: the same grammar, the same parse rounding and caps, the same canonical
 * `String()`, and exact arithmetic.
 *
 * Representation: the value as a bigint count of nano-units. That is exact, because parsing
 * already rounds every value up to the nano scale (1n), and nothing here divides.
 *
 * Quantities are immutable, so parsed results are memoised by input string: pod specs repeat the
 * same handful of strings ("100Mi", "500m") on every pass.
 */

export type QuantityFormat = 'DecimalExponent' | 'BinarySI' | 'DecimalSI';

export class QuantityError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'QuantityError';
  }
}

// Error texts are Kubernetes' own (ErrFormatWrong, ErrNumeric, ErrSuffix).
const SPLIT_RE = '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$';
const ERR_FORMAT = `quantities must match the regular expression '${SPLIT_RE}'`;
const ERR_SUFFIX = "unable to parse quantity's suffix";

const NANO = 1_000_000_000n;
const MILLI_IN_NANO = 1_000_000n;
/** Parsing caps BinarySI magnitudes at 2^63-1 (k8s maxAllowed); decimal ones are unbounded. */
const MAX_BINARY_NANOS = ((1n << 63n) - 1n) * NANO;
const INT64_MAX = (1n << 63n) - 1n;
const SAFE_NANOS = BigInt(Number.MAX_SAFE_INTEGER);
/** Beyond this a decimal exponent would make a number with more digits than any real use. */
const MAX_EXPONENT = 4096;

const DECIMAL_SUFFIXES = new Map<string, number>([
  ['n', -9],
  ['u', -6],
  ['m', -3],
  ['', 0],
  ['k', 3],
  ['M', 6],
  ['G', 9],
  ['T', 12],
  ['P', 15],
  ['E', 18],
]);
const DECIMAL_BY_EXPONENT = new Map<number, string>([...DECIMAL_SUFFIXES].map(([s, e]) => [e, s]));
const BINARY_SUFFIXES = new Map<string, number>([
  ['Ki', 10],
  ['Mi', 20],
  ['Gi', 30],
  ['Ti', 40],
  ['Pi', 50],
  ['Ei', 60],
]);
const BINARY_BY_POWER = ['', 'Ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei'];
const FORMATS: ReadonlySet<string> = new Set(['DecimalExponent', 'BinarySI', 'DecimalSI']);

const POW10: bigint[] = [];
function pow10(n: number): bigint {
  if (n < 64) {
    for (let i = POW10.length; i <= n; i++) POW10.push(i === 0 ? 1n : POW10[i - 1] * 10n);
    return POW10[n];
  }
  return 10n ** BigInt(n);
}

function fail(input: string, reason: string): never {
  throw new QuantityError(`invalid quantity ${JSON.stringify(input)}: ${reason}`);
}

function isDigit(c: number): boolean {
  return c >= 48 && c <= 57;
}

function isSuffixChar(c: string): boolean {
  return 'eEinumkKMGTP'.includes(c);
}

interface Scanned {
  negative: boolean;
  /** integer digits, leading zeros stripped ("0" when none are left) */
  num: string;
  /** fraction digits as written (trailing zeros kept) */
  denom: string;
  suffix: string;
}

/**
 * The k8s scanner (parseQuantityString), step for step, because its leniencies are part of the
 * accepted language: "+" and "." parse as zero, "1.G" is one giga, leading zeros are dropped.
 */
function scan(str: string): Scanned | null {
  const end = str.length;
  let pos = 0;
  let negative = false;
  if (end > 0) {
    if (str[0] === '-') {
      negative = true;
      pos++;
    } else if (str[0] === '+') {
      pos++;
    }
  }
  while (pos < end && str.charCodeAt(pos) === 48) pos++;
  if (pos >= end) return { negative, num: '0', denom: '', suffix: '' };

  let i = pos;
  while (i < end && isDigit(str.charCodeAt(i))) i++;
  const num = i > pos ? str.slice(pos, i) : '0';
  if (i >= end) return { negative, num, denom: '', suffix: '' };
  pos = i;

  let denom = '';
  if (str[pos] === '.') {
    pos++;
    i = pos;
    while (i < end && isDigit(str.charCodeAt(i))) i++;
    denom = str.slice(pos, i);
    if (i >= end) return { negative, num, denom, suffix: '' };
    pos = i;
  }

  const suffixStart = pos;
  while (pos < end && isSuffixChar(str[pos])) pos++;
  if (pos < end && (str[pos] === '-' || str[pos] === '+')) pos++;
  while (pos < end && isDigit(str.charCodeAt(pos))) pos++;
  if (pos < end) return null;
  return { negative, num, denom, suffix: str.slice(suffixStart) };
}

interface Suffix {
  base: 2 | 10;
  exponent: number;
  format: QuantityFormat;
}

function interpretSuffix(input: string, suffix: string): Suffix | null {
  const dec = DECIMAL_SUFFIXES.get(suffix);
  if (dec !== undefined) return { base: 10, exponent: dec, format: 'DecimalSI' };
  const bin = BINARY_SUFFIXES.get(suffix);
  if (bin !== undefined) return { base: 2, exponent: bin, format: 'BinarySI' };
  if (suffix.length > 1 && (suffix[0] === 'e' || suffix[0] === 'E')) {
    const digits = suffix.slice(1);
    // strconv.ParseInt(s, 10, 64): optional sign, at least one digit, int64 range.
    if (!/^[+-]?[0-9]+$/.test(digits)) return null;
    const big = BigInt(digits);
    if (big > INT64_MAX || big < -INT64_MAX - 1n) return null;
    // a negative exponent of any size is fine: the value just rounds up to 1n
    if (big > BigInt(MAX_EXPONENT)) fail(input, `exponent ${digits} is above the supported ${MAX_EXPONENT}`);
    return { base: 10, exponent: Number(big), format: 'DecimalExponent' };
  }
  return null;
}

/** a / b for a >= 0, b > 0, rounded up: the k8s parse rule for values finer than 1n. */
function divCeil(a: bigint, b: bigint): bigint {
  const q = a / b;
  return q * b === a ? q : q + 1n;
}

/** a / b rounded away from zero (Quantity.ScaledValue's rounding). */
function divAwayFromZero(a: bigint, b: bigint): bigint {
  const q = a / b;
  if (q * b === a) return q;
  return a < 0n ? q - 1n : q + 1n;
}

/**
 * Whether k8s ParseQuantity keeps the input text as the quantity's String() (its `s` cache).
 * It does so on its int64 fast path when the text already looks canonical; the test is loose,
 * so "+1", "001" and "1E3" print back as written. Reproduced because String() is observable.
 */
function keepsInput(sfx: Suffix, num: string, denom: string): boolean {
  if (sfx.format === 'BinarySI') {
    if (denom.length > 0) return false;
    const precision = 15 - num.length - Math.trunc((sfx.exponent * 3) / 10) - 1;
    if (precision < 0) return false;
    const value = BigInt(num);
    if (value << BigInt(sfx.exponent) > INT64_MAX) return false;
    return sfx.exponent % 10 === 0 && (value & 7n) !== 0n;
  }
  if (18 - (num.length + denom.length) < 0) return false;
  const scale = sfx.exponent - denom.length;
  if (scale < -9) return false;
  const shifted = num + denom;
  return scale % 3 === 0 && !shifted.endsWith('000') && shifted[0] !== '0';
}

const PARSE_CACHE_LIMIT = 4096;
const parseCache = new Map<string, Quantity>();

/** The constructor, for this module's own functions (set in Quantity's static block). */
let make: (nanos: bigint, format: QuantityFormat, text?: string) => Quantity;

export class Quantity {
  readonly format: QuantityFormat;
  /** the value in units of 1e-9 */
  private readonly nanos: bigint;
  private text: string | undefined;
  /** toNumber(), memoized: the policy reads the same requests on every pass */
  private number: number | undefined;

  private constructor(nanos: bigint, format: QuantityFormat, text?: string) {
    this.nanos = nanos;
    this.format = format;
    this.text = text;
  }

  /** resource.ParseQuantity. A JS number is parsed as its decimal string (1e3 -> "1000"). */
  static parse(input: string | number): Quantity {
    let str: string;
    if (typeof input === 'number') {
      if (!Number.isFinite(input)) fail(String(input), 'not a finite number');
      str = String(input);
    } else if (typeof input === 'string') {
      str = input;
    } else {
      throw new QuantityError(`invalid quantity ${String(input)}: not a string or number`);
    }
    const cached = parseCache.get(str);
    if (cached !== undefined) return cached;
    const q = parseUncached(str);
    if (parseCache.size >= PARSE_CACHE_LIMIT) parseCache.clear();
    parseCache.set(str, q);
    return q;
  }

  /** resource.NewQuantity(value, format): an integer count of units. */
  static fromNumber(value: number | bigint, format: QuantityFormat): Quantity {
    if (!FORMATS.has(format)) throw new QuantityError(`invalid quantity format ${JSON.stringify(format)}`);
    if (typeof value === 'number' && !Number.isInteger(value)) {
      throw new QuantityError(`invalid quantity value ${value}: must be an integer`);
    }
    return new Quantity(BigInt(value) * NANO, format);
  }

  /**
   * resource.NewScaledQuantity / NewMilliQuantity: value × 10^scale (scale -3 for millis), with a
   * format. Scales finer than nano (-9) are rejected: no quantity holds them.
   */
  static fromScaled(value: number | bigint, scale: number, format: QuantityFormat = 'DecimalSI'): Quantity {
    if (!FORMATS.has(format)) throw new QuantityError(`invalid quantity format ${JSON.stringify(format)}`);
    if (typeof value === 'number' && !Number.isInteger(value)) {
      throw new QuantityError(`invalid quantity value ${value}: must be an integer`);
    }
    if (!Number.isInteger(scale) || scale < -9 || scale > MAX_EXPONENT) {
      throw new QuantityError(`invalid quantity scale ${scale}: must be an integer from -9 to ${MAX_EXPONENT}`);
    }
    return new Quantity(BigInt(value) * pow10(scale + 9), format);
  }

  static zero(format: QuantityFormat = 'DecimalSI'): Quantity {
    return new Quantity(0n, format);
  }

  static {
    make = (nanos, format, text) => new Quantity(nanos, format, text);
  }

  sign(): -1 | 0 | 1 {
    return this.nanos > 0n ? 1 : this.nanos < 0n ? -1 : 0;
  }

  isZero(): boolean {
    return this.nanos === 0n;
  }

  cmp(other: Quantity): -1 | 0 | 1 {
    return this.nanos > other.nanos ? 1 : this.nanos < other.nanos ? -1 : 0;
  }

  /** Like k8s Add: the result keeps this format, except that a zero takes the other's format. */
  add(other: Quantity): Quantity {
    return new Quantity(this.nanos + other.nanos, this.nanos === 0n ? other.format : this.format);
  }

  /** Like k8s Sub: the result keeps this format, except that a zero takes the other's format. */
  sub(other: Quantity): Quantity {
    return new Quantity(this.nanos - other.nanos, this.nanos === 0n ? other.format : this.format);
  }

  neg(): Quantity {
    return new Quantity(-this.nanos, this.format);
  }

  /** Quantity.Value(): whole units, a fraction rounded away from zero (1.1 -> 2, -1.1 -> -2). */
  value(): number {
    return Number(divAwayFromZero(this.nanos, NANO));
  }

  /** Quantity.MilliValue(): thousandths, a finer remainder rounded away from zero. */
  milliValue(): number {
    return Number(divAwayFromZero(this.nanos, MILLI_IN_NANO));
  }

  /** The value as a float, for ratios and percentages. */
  toNumber(): number {
    return (this.number ??= this.computeNumber());
  }

  private computeNumber(): number {
    // one division of two exact doubles is correctly rounded; past 2^53 split off the fraction
    if (this.nanos <= SAFE_NANOS && this.nanos >= -SAFE_NANOS) return Number(this.nanos) / 1e9;
    const whole = this.nanos / NANO;
    const frac = this.nanos - whole * NANO;
    return Number(whole) + Number(frac) / 1e9;
  }

  /** Quantity.String(): the canonical form (CanonicalizeBytes), or the input when k8s keeps it. */
  toString(): string {
    if (this.text === undefined) this.text = canonical(this.nanos, this.format);
    return this.text;
  }

  toJSON(): string {
    return this.toString();
  }
}

function parseUncached(str: string): Quantity {
  if (str.length === 0) fail(str, ERR_FORMAT);
  if (str === '0') return make(0n, 'DecimalSI', '0');
  const s = scan(str);
  if (s === null) fail(str, ERR_FORMAT);
  const sfx = interpretSuffix(str, s.suffix);
  if (sfx === null) fail(str, ERR_SUFFIX);

  const digits = BigInt(s.num + s.denom);
  let nanos: bigint;
  if (sfx.base === 2) {
    const scaled = digits << BigInt(sfx.exponent);
    const shift = 9 - s.denom.length;
    nanos = shift >= 0 ? scaled * pow10(shift) : divCeil(scaled, pow10(-shift));
  } else {
    const shift = sfx.exponent - s.denom.length + 9;
    if (shift >= 0) {
      nanos = digits * pow10(shift);
    } else if (-shift > s.num.length + s.denom.length) {
      // every digit falls below 1n: a non-zero value rounds up to exactly 1n
      nanos = digits === 0n ? 0n : 1n;
    } else {
      nanos = divCeil(digits, pow10(-shift));
    }
  }

  let format = sfx.format;
  if (format === 'BinarySI') {
    if (nanos > MAX_BINARY_NANOS) nanos = MAX_BINARY_NANOS;
    // a binary value between 0 and 1 cannot print in binary units
    if (nanos > 0n && nanos < NANO) format = 'DecimalSI';
  }
  if (s.negative) nanos = -nanos;
  return make(nanos, format, keepsInput(sfx, s.num, s.denom) ? str : undefined);
}

function canonical(nanos: bigint, format: QuantityFormat): string {
  if (nanos === 0n) return '0';
  if (format === 'BinarySI') {
    // Binary units only for whole values of at least 1024; anything else prints as DecimalSI.
    if (nanos > -1024n * NANO && nanos < 1024n * NANO) return canonicalDecimal(nanos, 'DecimalSI');
    if (nanos % NANO !== 0n) return canonicalDecimal(nanos, 'DecimalSI');
    let units = nanos / NANO;
    let power = 0;
    // stops at Ei, the largest binary suffix, so that larger sums still print their true value
    while (power < 6 && (units & 1023n) === 0n) {
      units >>= 10n;
      power++;
    }
    return units.toString() + BINARY_BY_POWER[power];
  }
  return canonicalDecimal(nanos, format);
}

/** Mantissa without trailing zeros, exponent lowered to a multiple of 3, then the suffix. */
function canonicalDecimal(nanos: bigint, format: QuantityFormat): string {
  let digits = nanos.toString();
  let end = digits.length;
  while (digits.charCodeAt(end - 1) === 48) end--;
  let exponent = -9 + (digits.length - end);
  digits = digits.slice(0, end);
  const down = ((exponent % 3) + 3) % 3;
  if (down > 0) {
    digits += down === 1 ? '0' : '00';
    exponent -= down;
  }
  if (format === 'DecimalSI') {
    const suffix = DECIMAL_BY_EXPONENT.get(exponent);
    // DecimalSI has no suffix past E (1e18): larger values fall back to exponent notation
    if (suffix !== undefined) return digits + suffix;
  }
  return exponent === 0 ? digits : `${digits}e${exponent}`;
}
