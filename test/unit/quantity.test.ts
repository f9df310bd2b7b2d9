// Expected values are the facts of Kubernetes' own tables (apimachinery
// pkg/api/resource/quantity_test.go: TestQuantityParse, TestQuantityString, TestQuantityParseEmit,
// TestNewSet, TestMilliNewSet, TestNewScaledSet, TestScaledValue, TestQuantityCmp, TestAdd, TestSub,
// TestQuantityRoundUp) plus the documented rules of quantity.go.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Quantity, QuantityError, type QuantityFormat } from '../../src/policy/quantity';

const dec = (mantissa: number | bigint, exponent: number, format: QuantityFormat): Quantity => Quantity.fromScaled(mantissa, exponent, format);
const MAX_INT64 = (1n << 63n) - 1n;

function assertSame(got: Quantity, want: Quantity, label: string): void {
  assert.equal(got.cmp(want), 0, `${label}: got ${got.toString()}, want ${want.toString()}`);
}

// [input, mantissa, exponent, format] — k8s TestQuantityParse
const PARSE_TABLE: Array<[string, number | bigint, number, QuantityFormat]> = [
  ['0', 0, 0, 'DecimalSI'],
  ['0n', 0, 0, 'DecimalSI'],
  ['0u', 0, 0, 'DecimalSI'],
  ['0m', 0, 0, 'DecimalSI'],
  ['0Ki', 0, 0, 'BinarySI'],
  ['0k', 0, 0, 'DecimalSI'],
  ['0Mi', 0, 0, 'BinarySI'],
  ['0M', 0, 0, 'DecimalSI'],
  ['0Gi', 0, 0, 'BinarySI'],
  ['0G', 0, 0, 'DecimalSI'],
  ['0Ti', 0, 0, 'BinarySI'],
  ['0T', 0, 0, 'DecimalSI'],
  ['1', 1, 0, 'DecimalSI'],
  // binary suffixes
  ['1Ki', 1024, 0, 'BinarySI'],
  ['8Ki', 8 * 1024, 0, 'BinarySI'],
  ['7Mi', 7 * 1024 ** 2, 0, 'BinarySI'],
  ['6Gi', 6 * 1024 ** 3, 0, 'BinarySI'],
  ['5Ti', 5 * 1024 ** 4, 0, 'BinarySI'],
  ['4Pi', 4n * 1024n ** 5n, 0, 'BinarySI'],
  ['3Ei', 3n * 1024n ** 6n, 0, 'BinarySI'],
  ['10Ti', 10 * 1024 ** 4, 0, 'BinarySI'],
  ['100Ti', 100 * 1024 ** 4, 0, 'BinarySI'],
  // decimal suffixes
  ['5n', 5, -9, 'DecimalSI'],
  ['4u', 4, -6, 'DecimalSI'],
  ['3m', 3, -3, 'DecimalSI'],
  ['9', 9, 0, 'DecimalSI'],
  ['8k', 8, 3, 'DecimalSI'],
  ['50k', 5, 4, 'DecimalSI'],
  ['7M', 7, 6, 'DecimalSI'],
  ['6G', 6, 9, 'DecimalSI'],
  ['5T', 5, 12, 'DecimalSI'],
  ['40T', 4, 13, 'DecimalSI'],
  ['300T', 3, 14, 'DecimalSI'],
  ['2P', 2, 15, 'DecimalSI'],
  ['1E', 1, 18, 'DecimalSI'],
  // decimal exponents
  ['1E-3', 1, -3, 'DecimalExponent'],
  ['1e3', 1, 3, 'DecimalExponent'],
  ['1E6', 1, 6, 'DecimalExponent'],
  ['1e9', 1, 9, 'DecimalExponent'],
  ['1E12', 1, 12, 'DecimalExponent'],
  ['1e15', 1, 15, 'DecimalExponent'],
  ['1E18', 1, 18, 'DecimalExponent'],
  ['1e14', 1, 14, 'DecimalExponent'],
  ['1e13', 1, 13, 'DecimalExponent'],
  ['100.035k', 100035, 0, 'DecimalSI'],
  // things that look like floating point
  ['0.001', 1, -3, 'DecimalSI'],
  ['0.0005k', 5, -1, 'DecimalSI'],
  ['0.005', 5, -3, 'DecimalSI'],
  ['0.05', 5, -2, 'DecimalSI'],
  ['0.5', 5, -1, 'DecimalSI'],
  ['0.00050k', 5, -1, 'DecimalSI'],
  ['0.00500', 5, -3, 'DecimalSI'],
  ['0.05000', 5, -2, 'DecimalSI'],
  ['0.50000', 5, -1, 'DecimalSI'],
  ['0.5e0', 5, -1, 'DecimalExponent'],
  ['0.5e-1', 5, -2, 'DecimalExponent'],
  ['0.5e-2', 5, -3, 'DecimalExponent'],
  ['10.035M', 10035, 3, 'DecimalSI'],
  ['1.2e3', 12, 2, 'DecimalExponent'],
  ['1.3E+6', 13, 5, 'DecimalExponent'],
  ['1.40e9', 14, 8, 'DecimalExponent'],
  ['1.53E12', 153, 10, 'DecimalExponent'],
  ['1.6e15', 16, 14, 'DecimalExponent'],
  ['1.7E18', 17, 17, 'DecimalExponent'],
  ['9.01', 901, -2, 'DecimalSI'],
  ['8.1k', 81, 2, 'DecimalSI'],
  ['7.123456M', 7123456, 0, 'DecimalSI'],
  ['6.987654321G', 6987654321, 0, 'DecimalSI'],
  ['5.444T', 5444, 9, 'DecimalSI'],
  ['40.1T', 401, 11, 'DecimalSI'],
  ['300.2T', 3002, 11, 'DecimalSI'],
  ['2.5P', 25, 14, 'DecimalSI'],
  ['1.01E', 101, 16, 'DecimalSI'],
  // things that saturate or round (up, to 1n)
  ['3.001n', 4, -9, 'DecimalSI'],
  ['1.1E-9', 2, -9, 'DecimalExponent'],
  ['0.0000000001', 1, -9, 'DecimalSI'],
  ['0.0000000005', 1, -9, 'DecimalSI'],
  ['0.00000000050', 1, -9, 'DecimalSI'],
  ['0.5e-9', 1, -9, 'DecimalExponent'],
  ['0.9n', 1, -9, 'DecimalSI'],
  ['0.00000012345', 124, -9, 'DecimalSI'],
  ['0.00000012354', 124, -9, 'DecimalSI'],
  ['9Ei', MAX_INT64, 0, 'BinarySI'],
  ['9223372036854775807Ki', MAX_INT64, 0, 'BinarySI'],
  ['12E', 12, 18, 'DecimalSI'],
  // fractional binary
  ['100.035Ki', 10243584, -2, 'BinarySI'],
  ['0.5Mi', 0.5 * 1024 * 1024, 0, 'BinarySI'],
  ['0.05Gi', 536870912, -1, 'BinarySI'],
  ['0.025Ti', 274877906944, -1, 'BinarySI'],
  // "things written by trolls"
  ['0.000000000001Ki', 2, -9, 'DecimalSI'], // rounds up, changes format
  ['.001', 1, -3, 'DecimalSI'],
  ['.0001k', 100, -3, 'DecimalSI'],
  ['1.', 1, 0, 'DecimalSI'],
  ['1.G', 1, 9, 'DecimalSI'],
];

test('parse: value and format of every suffix, fraction and exponent form (k8s table)', () => {
  for (const [input, mantissa, exponent, format] of PARSE_TABLE) {
    const got = Quantity.parse(input);
    assertSame(got, dec(mantissa, exponent, format), input);
    assert.equal(got.format, format, `${input} format`);
  }
});

test('parse: a leading "-" negates and keeps the format; a leading "+" changes nothing', () => {
  for (const [input, mantissa, exponent, format] of PARSE_TABLE) {
    const want = dec(mantissa, exponent, format);
    const negative = Quantity.parse(`-${input}`);
    assertSame(negative, want.neg(), `-${input}`);
    assert.equal(negative.format, format, `-${input} format`);
    const positive = Quantity.parse(`+${input}`);
    assertSame(positive, want, `+${input}`);
    assert.equal(positive.format, format, `+${input} format`);
  }
});

test('parse: the scanner leniencies of k8s ("+", ".", "-." are zero)', () => {
  for (const input of ['+', '-', '.', '-.', '+0', '-0', '00', '0.0Ki']) {
    const q = Quantity.parse(input);
    assert.ok(q.isZero(), input);
    assert.equal(q.toString(), '0', input);
  }
});

test('parse: malformed input throws QuantityError naming the input and the k8s reason', () => {
  const formatWrong = /quantities must match the regular expression/;
  const badSuffix = /unable to parse quantity's suffix/;
  const cases: Array<[string, RegExp]> = [
    ['', formatWrong],
    ['1.1.M', formatWrong],
    ['1+1.0M', formatWrong],
    ['0.1mi', badSuffix],
    ['0.1am', formatWrong],
    ['aoeu', formatWrong],
    ['.5i', badSuffix],
    ['1i', badSuffix],
    ['-3.01i', badSuffix],
    ['-3.01e-', badSuffix],
    [' 1', formatWrong],
    ['1 ', formatWrong],
    ['1Qi', formatWrong],
    ['abc', formatWrong],
    ['1.2.3', formatWrong],
    ['--1', badSuffix],
    ['1K', badSuffix], // kilo is lower-case k
    ['1KI', formatWrong], // upper-case I is not a suffix character
    ['1e', badSuffix],
    ['1Ee3', badSuffix],
    ['1e3.5', formatWrong],
    ['1e99999999999999999999', badSuffix], // exponent beyond int64
  ];
  for (const [input, reason] of cases) {
    assert.throws(
      () => Quantity.parse(input),
      (err: unknown) => {
        assert.ok(err instanceof QuantityError, `${JSON.stringify(input)} throws QuantityError`);
        assert.match(err.message, reason, JSON.stringify(input));
        assert.ok(err.message.includes(JSON.stringify(input)), `message names ${JSON.stringify(input)}`);
        return true;
      },
    );
  }
});

test('parse: exponents too large to hold are refused, finer ones round up to 1n', () => {
  assert.throws(() => Quantity.parse('1e5000'), QuantityError);
  assert.equal(Quantity.parse('1e4096').toString(), '10e4095'); // exponent lowered to a multiple of 3
  const tiny = Quantity.parse('1e-5000');
  assertSame(tiny, dec(1, -9, 'DecimalSI'), '1e-5000');
  assert.equal(tiny.toString(), '1e-9');
  assert.ok(Quantity.parse('0e-5000').isZero());
});

test('parse: a JS number is read as its decimal string', () => {
  const cases: Array<[number, string, number]> = [
    [1e3, '1k', 1000],
    [0, '0', 0],
    [1536, '1536', 1536],
    [-2, '-2', -2],
    [0.5, '500m', 1],
    [2.5e-7, '250e-9', 1], // String(2.5e-7) is "2.5e-7": an exponent form
  ];
  for (const [n, canonical, value] of cases) {
    const q = Quantity.parse(n);
    assert.equal(q.toString(), canonical, String(n));
    assert.equal(q.value(), value, String(n));
  }
  // String(1e21) is "1e+21", which k8s keeps verbatim as String() (it looks canonical)
  assert.equal(Quantity.parse(1e21).toString(), '1e+21');
  assertSame(Quantity.parse(1e21), dec(1, 21, 'DecimalExponent'), '1e21');
  assert.equal(Quantity.parse(1e21).format, 'DecimalExponent');
  for (const bad of [NaN, Infinity, -Infinity]) assert.throws(() => Quantity.parse(bad), QuantityError);
});

// [quantity, canonical, alternate spelling that must print canonically] — k8s TestQuantityString
const STRING_TABLE: Array<[Quantity, string, string]> = [
  [dec(1024 ** 3, 0, 'BinarySI'), '1Gi', '1024Mi'],
  [dec(300 * 1024 ** 2, 0, 'BinarySI'), '300Mi', '307200Ki'],
  [dec(6 * 1024, 0, 'BinarySI'), '6Ki', ''],
  [dec(1001 * 1024 ** 3, 0, 'BinarySI'), '1001Gi', '1025024Mi'],
  [dec(1024 ** 4, 0, 'BinarySI'), '1Ti', '1024Gi'],
  [dec(5, 0, 'BinarySI'), '5', '5000m'],
  [dec(500, -3, 'BinarySI'), '500m', '0.5'],
  [dec(1, 9, 'DecimalSI'), '1G', '1000M'],
  [dec(1000, 6, 'DecimalSI'), '1G', '0.001T'],
  [dec(1000000, 3, 'DecimalSI'), '1G', ''],
  [dec(1000000000, 0, 'DecimalSI'), '1G', ''],
  [dec(1, -3, 'DecimalSI'), '1m', '1000u'],
  [dec(80, -3, 'DecimalSI'), '80m', ''],
  [dec(1080, -3, 'DecimalSI'), '1080m', '1.08'],
  [dec(108, -2, 'DecimalSI'), '1080m', '1080000000n'],
  [dec(300, 6, 'DecimalSI'), '300M', ''],
  [dec(1, 12, 'DecimalSI'), '1T', ''],
  [dec(1, 18, 'DecimalSI'), '1E', ''],
  [dec(1, 21, 'DecimalSI'), '1e21', '1000E'],
  [dec(5, 21, 'DecimalSI'), '5e21', '5000E'],
  [dec(1, 24, 'DecimalSI'), '1e24', '1000000E'],
  [dec(1234567, 6, 'DecimalSI'), '1234567M', ''],
  [dec(1234567, -3, 'BinarySI'), '1234567m', ''],
  [dec(3, 3, 'DecimalSI'), '3k', ''],
  [dec(1025, 0, 'BinarySI'), '1025', ''],
  [dec(0, 0, 'DecimalSI'), '0', ''],
  [dec(0, 0, 'BinarySI'), '0', ''],
  [dec(1, 9, 'DecimalExponent'), '1e9', '.001e12'],
  [dec(1, -3, 'DecimalExponent'), '1e-3', '0.001e0'],
  [dec(1, -9, 'DecimalExponent'), '1e-9', '1000e-12'],
  [dec(80, -3, 'DecimalExponent'), '80e-3', ''],
  [dec(300, 6, 'DecimalExponent'), '300e6', ''],
  [dec(1, 12, 'DecimalExponent'), '1e12', ''],
  [dec(1, 3, 'DecimalExponent'), '1e3', ''],
  [dec(3, 3, 'DecimalExponent'), '3e3', ''],
  [dec(0, 0, 'DecimalExponent'), '0', '00'],
  [dec(1, -9, 'DecimalSI'), '1n', ''],
  [dec(80, -9, 'DecimalSI'), '80n', ''],
  [dec(1080, -9, 'DecimalSI'), '1080n', ''],
  [dec(108, -8, 'DecimalSI'), '1080n', ''],
  [dec(1, -6, 'DecimalSI'), '1u', ''],
  [dec(80, -6, 'DecimalSI'), '80u', ''],
  [dec(1080, -6, 'DecimalSI'), '1080u', ''],
];

test('toString: the canonical form, its parse round trip, alternates and negatives (k8s table)', () => {
  for (const [q, canonical, alternate] of STRING_TABLE) {
    assert.equal(q.toString(), canonical);
    const reparsed = Quantity.parse(canonical);
    assert.equal(reparsed.toString(), canonical, `parse(${canonical})`);
    assertSame(reparsed, q, `parse(${canonical}) value`);
    if (alternate !== '') {
      assert.equal(Quantity.parse(alternate).toString(), canonical, `parse(${alternate})`);
    }
    if (!q.isZero()) assert.equal(q.neg().toString(), `-${canonical}`, `-${canonical}`);
  }
});

test('toString: parse-then-print (k8s TestQuantityParseEmit) and the brief examples', () => {
  const cases: Array<[string, string]> = [
    ['1Ki', '1Ki'],
    ['1Mi', '1Mi'],
    ['1Gi', '1Gi'],
    ['1024Mi', '1Gi'],
    ['1000M', '1G'],
    ['.001Ki', '1024m'],
    ['.000001Ki', '1024u'],
    ['.000000001Ki', '1024n'],
    ['.000000000001Ki', '2n'],
    ['1.5Gi', '1536Mi'],
    ['0.5Ki', '512'],
    ['1.1Ki', '1126400m'],
    ['100m', '100m'],
    ['2000', '2k'],
    ['1.5G', '1500M'],
    ['1500', '1500'],
    ['1.5e9', '1500e6'],
    ['1.5k', '1500'],
    ['1.2345', '1234500u'],
    ['0.1', '100m'],
    ['0.01', '10m'],
    ['2048Ki', '2Mi'],
    ['1536Ki', '1536Ki'],
    ['1025Ki', '1025Ki'],
    ['1024', '1024'], // DecimalSI: never a binary suffix
    ['8Ei', '9223372036854775807'], // capped at 2^63-1, which 1024 does not divide
    ['18446744073709551616', '18446744073709551616'], // decimal values are not capped
  ];
  for (const [input, want] of cases) {
    assert.equal(Quantity.parse(input).toString(), want, input);
    if (want !== '0') assert.equal(Quantity.parse(`-${input}`).toString(), `-${want}`, `-${input}`);
  }
});

test('toString: BinarySI prints binary units only for whole values of at least 1024', () => {
  const cases: Array<[number, string]> = [
    [1500, '1500'],
    [1024, '1Ki'],
    [1023, '1023'],
    [2048, '2Ki'],
    [3 * 1024 ** 3, '3Gi'],
    [1024 ** 3 + 1024, '1048577Ki'],
    [1, '1'],
  ];
  for (const [n, want] of cases) {
    assert.equal(Quantity.fromNumber(n, 'BinarySI').toString(), want, String(n));
    assert.equal(Quantity.fromNumber(-n, 'BinarySI').toString(), `-${want}`, String(-n));
  }
  // a sum past the cap stays exact and prints in the largest suffix
  const eightEi = Quantity.parse('4Ei').add(Quantity.parse('4Ei'));
  assert.equal(eightEi.toString(), '8Ei');
  assert.equal(Quantity.parse('4Ei').add(Quantity.parse('4Ei')).add(eightEi).add(eightEi).toString(), '24Ei');
});

test('toString: text that k8s keeps verbatim from parse is printed back as written', () => {
  // ParseQuantity reuses the input as String() on its int64 path when it "looks" canonical
  // (quantity.go: scale%3 == 0, no "000" tail, no leading 0; binary: value&7 != 0).
  const kept = ['+1', '001', '1E3', '1.G', '+1Ki', '100m', '1200k', '1Ki', '1025Ki'];
  for (const input of kept) assert.equal(Quantity.parse(input).toString(), input, input);
  const rebuilt: Array<[string, string]> = [
    ['+1000', '1k'], // "000" tail
    ['+0.5', '500m'], // leading 0 of "05"
    ['+8Ki', '8Ki'], // value&7 == 0
    ['+5Pi', '5Pi'], // too many digits for the int64 path
    ['+1.5', '1500m'], // scale -1 is not a multiple of 3
  ];
  for (const [input, want] of rebuilt) assert.equal(Quantity.parse(input).toString(), want, input);
});

test('fromNumber: resource.NewQuantity (k8s TestNewSet) round-trips through parse', () => {
  const cases: Array<[number, QuantityFormat, string]> = [
    [1, 'DecimalSI', '1'],
    [1000, 'DecimalSI', '1k'],
    [1234000, 'DecimalSI', '1234k'],
    [1024, 'BinarySI', '1Ki'],
    [1000000, 'DecimalExponent', '1e6'],
    [1024 * 1024, 'BinarySI', '1Mi'],
  ];
  for (const [value, format, want] of cases) {
    const q = Quantity.fromNumber(value, format);
    assert.equal(q.format, format);
    assert.equal(q.toString(), want);
    assert.equal(Quantity.parse(q.toString()).value(), value);
    assert.equal(Quantity.fromNumber(BigInt(value), format).toString(), want, `bigint ${value}`);
  }
  assert.throws(() => Quantity.fromNumber(1.5, 'DecimalSI'), QuantityError);
  assert.throws(() => Quantity.fromNumber(1, 'Bogus' as QuantityFormat), QuantityError);
});

test('fromScaled: NewMilliQuantity and NewScaledQuantity (k8s TestMilliNewSet, TestNewScaledSet)', () => {
  const milli: Array<[number, QuantityFormat, string, boolean]> = [
    [1, 'DecimalSI', '1m', true],
    [1000, 'DecimalSI', '1', true],
    [1234000, 'DecimalSI', '1234', true],
    [1024, 'BinarySI', '1024m', false],
    [1000000, 'DecimalExponent', '1e3', true],
    [1024 * 1024, 'BinarySI', '1048576m', false],
  ];
  for (const [value, format, want, exact] of milli) {
    const q = Quantity.fromScaled(value, -3, format);
    assert.equal(q.toString(), want);
    if (exact) assert.equal(Quantity.parse(want).milliValue(), value);
  }
  const scaled: Array<[number, number, string]> = [
    [1, -9, '1n'],
    [1000, -9, '1u'],
    [1, -6, '1u'],
    [1000, -6, '1m'],
    [1, -3, '1m'],
    [1000, -3, '1'],
    [1, 0, '1'],
    [0, -9, '0'],
    [0, -6, '0'],
    [0, -3, '0'],
    [0, 0, '0'],
  ];
  for (const [value, scale, want] of scaled) {
    assert.equal(Quantity.fromScaled(value, scale).toString(), want, `${value}e${scale}`);
  }
  assert.throws(() => Quantity.fromScaled(1, -10), QuantityError);
  assert.throws(() => Quantity.fromScaled(1.5, 0), QuantityError);
});

test('value and milliValue round away from zero (k8s ScaledValue, TestQuantityRoundUp)', () => {
  const cases: Array<[string, number, number]> = [
    ['9.01', 10, 9010],
    ['-9.01', -10, -9010],
    ['1n', 1, 1],
    ['-1n', -1, -1],
    ['1u', 1, 1],
    ['1m', 1, 1],
    ['1', 1, 1000],
    ['100m', 1, 100],
    ['1500m', 2, 1500],
    ['2', 2, 2000],
    ['0', 0, 0],
    ['1.1Ki', 1127, 1126400],
    ['1Gi', 1073741824, 1073741824000],
    ['128974848', 128974848, 128974848000],
    ['129e6', 129000000, 129000000000],
    ['123Mi', 128974848, 128974848000],
  ];
  for (const [input, value, milli] of cases) {
    const q = Quantity.parse(input);
    assert.equal(q.value(), value, `${input}.value()`);
    assert.equal(q.milliValue(), milli, `${input}.milliValue()`);
  }
  // TestScaledValue: one unit of a finer scale reads as at least 1 of a coarser one
  assert.equal(Quantity.fromScaled(1, -9).value(), 1);
  assert.equal(Quantity.fromScaled(1, -9).milliValue(), 1);
  assert.equal(Quantity.fromScaled(1, -6).milliValue(), 1);
  assert.equal(Quantity.fromScaled(1, 0).milliValue(), 1000);
  assert.equal(Quantity.fromScaled(1, 2).value(), 100);
});

test('toNumber is the value as a float', () => {
  const cases: Array<[string, number]> = [
    ['100m', 0.1],
    ['-250m', -0.25],
    ['1.5Gi', 1610612736],
    ['1n', 1e-9],
    ['1.2345', 1.2345],
    ['0', 0],
    ['12E', 12e18],
  ];
  for (const [input, want] of cases) assert.equal(Quantity.parse(input).toNumber(), want, input);
});

test('cmp, sign and isZero are exact (k8s TestQuantityCmp and beyond 2^53)', () => {
  const cases: Array<[string, string, -1 | 0 | 1]> = [
    ['0', '0', 0],
    ['100m', '50m', 1],
    ['50m', '100m', -1],
    ['10000T', '100Gi', 1],
    ['1Ki', '1024', 0],
    ['1k', '1000', 0],
    ['1e3', '1k', 0],
    ['1Gi', '1G', 1],
    ['-1', '1n', -1],
    ['9007199254740993', '9007199254740992', 1], // equal as doubles
    ['8Ei', '9223372036854775807', 0],
    ['1n', '0', 1],
  ];
  for (const [a, b, want] of cases) {
    assert.equal(Quantity.parse(a).cmp(Quantity.parse(b)), want, `${a} vs ${b}`);
    assert.equal(Quantity.parse(b).cmp(Quantity.parse(a)), -want || 0, `${b} vs ${a}`);
  }
  assert.equal(Quantity.parse('-3m').sign(), -1);
  assert.equal(Quantity.parse('0Ki').sign(), 0);
  assert.equal(Quantity.parse('1n').sign(), 1);
  assert.ok(Quantity.parse('0.0').isZero());
  assert.ok(!Quantity.parse('1n').isZero());
});

test('add and sub: exact, immutable, format of the receiver unless it is zero (k8s TestAdd, TestSub)', () => {
  const addCases: Array<[Quantity, Quantity, Quantity, QuantityFormat]> = [
    [dec(10, 0, 'DecimalSI'), dec(1, 1, 'DecimalSI'), dec(20, 0, 'DecimalSI'), 'DecimalSI'],
    [dec(10, 0, 'DecimalSI'), dec(1, 0, 'BinarySI'), dec(11, 0, 'DecimalSI'), 'DecimalSI'],
    [dec(10, 0, 'BinarySI'), dec(1, 0, 'DecimalSI'), dec(11, 0, 'BinarySI'), 'BinarySI'],
    [Quantity.zero(), dec(50, 0, 'DecimalSI'), dec(50, 0, 'DecimalSI'), 'DecimalSI'],
    [dec(50, 0, 'DecimalSI'), Quantity.zero(), dec(50, 0, 'DecimalSI'), 'DecimalSI'],
    [Quantity.zero(), Quantity.zero(), dec(0, 0, 'DecimalSI'), 'DecimalSI'],
    [Quantity.zero(), dec(1, 0, 'BinarySI'), dec(1, 0, 'BinarySI'), 'BinarySI'],
  ];
  for (const [a, b, want, format] of addCases) {
    const before = a.toString();
    const sum = a.add(b);
    assertSame(sum, want, `${a.toString()} + ${b.toString()}`);
    assert.equal(sum.format, format);
    assert.equal(a.toString(), before, 'receiver unchanged');
  }
  const subCases: Array<[Quantity, Quantity, Quantity, QuantityFormat]> = [
    [dec(10, 0, 'DecimalSI'), dec(1, 1, 'DecimalSI'), dec(0, 0, 'DecimalSI'), 'DecimalSI'],
    [dec(10, 0, 'DecimalSI'), dec(1, 0, 'BinarySI'), dec(9, 0, 'DecimalSI'), 'DecimalSI'],
    [dec(10, 0, 'BinarySI'), dec(1, 0, 'DecimalSI'), dec(9, 0, 'BinarySI'), 'BinarySI'],
    [Quantity.zero(), dec(50, 0, 'DecimalSI'), dec(-50, 0, 'DecimalSI'), 'DecimalSI'],
    [dec(50, 0, 'DecimalSI'), Quantity.zero(), dec(50, 0, 'DecimalSI'), 'DecimalSI'],
    [Quantity.zero(), Quantity.zero(), dec(0, 0, 'DecimalSI'), 'DecimalSI'],
  ];
  for (const [a, b, want, format] of subCases) {
    const diff = a.sub(b);
    assertSame(diff, want, `${a.toString()} - ${b.toString()}`);
    assert.equal(diff.format, format);
  }
  // TestQuantityAddZeroPreservesSuffix / TestQuantitySubZeroPreservesSuffix
  const zero = Quantity.parse('0');
  for (const s of ['100m', '1Gi']) {
    const v = Quantity.parse(s);
    assert.equal(v.add(zero).toString(), s);
    assert.equal(zero.add(v).toString(), s);
    assert.equal(v.sub(zero).toString(), s);
    assert.equal(zero.sub(v).toString(), v.neg().toString());
  }
  // exact past 2^53 and mixed scales
  assert.equal(Quantity.parse('9007199254740992').add(Quantity.parse('1')).toString(), '9007199254740993');
  assert.equal(Quantity.parse('1Gi').sub(Quantity.parse('1n')).toString(), '1073741823999999999n');
  assert.equal(Quantity.parse('1').add(Quantity.parse('500m')).toString(), '1500m');
  assert.equal(Quantity.parse('1Gi').add(Quantity.parse('512Mi')).toString(), '1536Mi');
  assert.equal(Quantity.parse('1Gi').sub(Quantity.parse('2Gi')).toString(), '-1Gi');
});

test('neg keeps the format and negates exactly (k8s TestQuantityNeg, TestNeg)', () => {
  assert.equal(dec(901, -2, 'DecimalSI').neg().toString(), '-9010m');
  const ten = dec(10, 0, 'BinarySI');
  assertSame(ten.neg(), dec(-10, 0, 'BinarySI'), '-10');
  assert.equal(ten.neg().format, 'BinarySI');
  assertSame(ten.neg().neg(), ten, '--10');
  assert.ok(Quantity.zero().neg().isZero());
  assert.equal(Quantity.zero().neg().toString(), '0');
  assert.equal(Quantity.zero('BinarySI').format, 'BinarySI');
  assert.equal(Quantity.zero().format, 'DecimalSI');
});

test('parse returns equal values for repeated input and they do not alias mutable state', () => {
  const a = Quantity.parse('100Mi');
  const b = Quantity.parse('100Mi');
  assertSame(a, b, '100Mi');
  assert.equal(a.add(a).toString(), '200Mi');
  assert.equal(b.toString(), '100Mi');
});
