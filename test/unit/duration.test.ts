// Expected values are the facts of Go's own tables (src/time/time_test.go: parseDurationTests,
// parseDurationErrorTests, durationTests, TestParseDurationRoundTrip).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DurationError, formatDuration, parseDuration } from '../../src/policy/duration';

const NS = 1;
const US = 1000 * NS;
const MS = 1000 * US;
const S = 1000 * MS;
const M = 60 * S;
const H = 60 * M;
const MAX = (1n << 63n) - 1n;
const MIN = -(1n << 63n);

test('parseDuration: Go parseDurationTests', () => {
  const cases: Array<[string, number]> = [
    ['0', 0],
    ['5s', 5 * S],
    ['30s', 30 * S],
    ['1478s', 1478 * S],
    ['-5s', -5 * S],
    ['+5s', 5 * S],
    ['-0', 0],
    ['+0', 0],
    ['5.0s', 5 * S],
    ['5.6s', 5 * S + 600 * MS],
    ['5.s', 5 * S],
    ['.5s', 500 * MS],
    ['1.0s', 1 * S],
    ['1.00s', 1 * S],
    ['1.004s', 1 * S + 4 * MS],
    ['1.0040s', 1 * S + 4 * MS],
    ['100.00100s', 100 * S + 1 * MS],
    ['10ns', 10 * NS],
    ['11us', 11 * US],
    ['12\u00b5s', 12 * US],
    ['12\u03bcs', 12 * US],
    ['13ms', 13 * MS],
    ['14s', 14 * S],
    ['15m', 15 * M],
    ['16h', 16 * H],
    ['3h30m', 3 * H + 30 * M],
    ['10.5s4m', 4 * M + 10 * S + 500 * MS],
    ['-2m3.4s', -(2 * M + 3 * S + 400 * MS)],
    ['1h2m3s4ms5us6ns', 1 * H + 2 * M + 3 * S + 4 * MS + 5 * US + 6 * NS],
    ['39h9m14.425s', 39 * H + 9 * M + 14 * S + 425 * MS],
    ['52763797000ns', 52763797000 * NS],
    ['0.3333333333333333333h', 20 * M], // more than 9 digits after the point
    ['0.100000000000000000000h', 6 * M], // issue 15011: long fraction
    ['0.830103483285477580700h', 49 * M + 48 * S + 372539827 * NS], // leadingFraction overflow check
    ['1.5h', 90 * M],
    ['1h30m', 90 * M],
    ['300ms', 300 * MS],
    ['1.5us', 1500 * NS],
  ];
  for (const [input, want] of cases) {
    const got = parseDuration(input);
    assert.equal(got, want, input);
  }
});

test('parseDuration: int64 extremes parse (values beyond 2^53 are the nearest double)', () => {
  const cases: Array<[string, bigint]> = [
    ['9007199254740993ns', (1n << 53n) + 1n],
    ['9223372036854775807ns', MAX],
    ['9223372036854775.807us', MAX],
    ['9223372036s854ms775us807ns', MAX],
    ['-9223372036854775808ns', MIN],
    ['-9223372036854775.808us', MIN],
    ['-9223372036s854ms775us808ns', MIN],
    ['-2562047h47m16.854775808s', MIN],
  ];
  for (const [input, want] of cases) assert.equal(parseDuration(input), Number(want), input);
  // the exact one below 2^53 stays exact
  assert.equal(parseDuration('9007199254740991ns'), Number.MAX_SAFE_INTEGER);
});

test('parseDuration: Go parseDurationErrorTests, with Go messages', () => {
  const invalid: Array<[string, string]> = [
    ['', '""'],
    ['-', '"-"'],
    ['s', '"s"'],
    ['.', '"."'],
    ['-.', '"-."'],
    ['.s', '".s"'],
    ['+.s', '"+.s"'],
    ['\uFFFD', '"\\xef\\xbf\\xbd"'],
    ['\uFFFD hello \uFFFD world', '"\\xef\\xbf\\xbd hello \\xef\\xbf\\xbd world"'],
    ['9223372036854775810ns', '"9223372036854775810ns"'],
    ['9223372036854775808ns', '"9223372036854775808ns"'],
    ['-9223372036854775809ns', '"-9223372036854775809ns"'],
    ['9223372036854776us', '"9223372036854776us"'],
    ['3000000h', '"3000000h"'],
    ['9223372036854775.808us', '"9223372036854775.808us"'],
    ['9223372036854ms775us808ns', '"9223372036854ms775us808ns"'],
  ];
  for (const [input, quoted] of invalid) {
    assert.throws(
      () => parseDuration(input),
      (err: unknown) => {
        assert.ok(err instanceof DurationError, JSON.stringify(input));
        assert.equal(err.message, `time: invalid duration ${quoted}`, JSON.stringify(input));
        return true;
      },
    );
  }
  const other: Array<[string, string]> = [
    ['3', 'time: missing unit in duration "3"'],
    ['1', 'time: missing unit in duration "1"'],
    ['1h2', 'time: missing unit in duration "1h2"'],
    ['1d', 'time: unknown unit "d" in duration "1d"'],
    ['1x', 'time: unknown unit "x" in duration "1x"'],
    ['1S', 'time: unknown unit "S" in duration "1S"'],
    ['1 s', 'time: unknown unit " s" in duration "1 s"'],
    ['1\u00e9s', 'time: unknown unit "\\xc3\\xa9s" in duration "1\\xc3\\xa9s"'],
    ['5"s', 'time: unknown unit "\\"s" in duration "5\\"s"'],
  ];
  for (const [input, message] of other) {
    assert.throws(
      () => parseDuration(input),
      (err: unknown) => err instanceof DurationError && err.message === message,
    );
  }
});

test('formatDuration: Go durationTests, positive and negated', () => {
  const cases: Array<[string, number | bigint]> = [
    ['0s', 0],
    ['1ns', 1 * NS],
    ['1.1\u00b5s', 1100 * NS],
    ['2.2ms', 2200 * US],
    ['3.3s', 3300 * MS],
    ['4m5s', 4 * M + 5 * S],
    ['4m5.001s', 4 * M + 5001 * MS],
    ['5h6m7.001s', 5 * H + 6 * M + 7001 * MS],
    ['8m0.000000001s', 8 * M + 1 * NS],
    ['2562047h47m16.854775807s', MAX],
    ['1.5s', 1500 * MS],
    ['1m30s', 90 * S],
    ['4m0s', 4 * M],
    ['1h0m0s', H],
    ['100ms', 100 * MS],
    ['1.5\u00b5s', 1500 * NS],
    ['999ns', 999 * NS],
    ['1\u00b5s', US],
    ['1ms', MS],
    ['1s', S],
    ['999.999999ms', S - 1],
    ['72h3m0.5s', 72 * H + 3 * M + 500 * MS],
  ];
  for (const [want, d] of cases) {
    assert.equal(formatDuration(d), want, String(d));
    if (d !== 0) assert.equal(formatDuration(-d), `-${want}`, String(-d));
  }
  assert.equal(formatDuration(MIN), '-2562047h47m16.854775808s');
});

test('formatDuration: numbers truncate to whole ns and clamp to the int64 range', () => {
  assert.equal(formatDuration(1.9), '1ns');
  assert.equal(formatDuration(-1.9), '-1ns');
  assert.equal(formatDuration(1e30), '2562047h47m16.854775807s');
  assert.equal(formatDuration(-1e30), '-2562047h47m16.854775808s');
  assert.throws(() => formatDuration(NaN), DurationError);
  assert.throws(() => formatDuration(Infinity), DurationError);
});

test('round trip: millisecond durations print and parse back exactly (Go TestParseDurationRoundTrip)', () => {
  // a fixed linear-congruential sequence keeps the test repeatable
  let seed = 12345;
  for (let i = 0; i < 200; i++) {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    const d = seed * MS;
    assert.equal(parseDuration(formatDuration(d)), d, String(d));
    assert.equal(parseDuration(formatDuration(-d)), -d, String(-d));
  }
  for (const d of [0, 1, 999, 1000, 1001, 5 * M, H + 1, 36 * H + 59 * M + 59 * S + 999999999]) {
    assert.equal(parseDuration(formatDuration(d)), d, String(d));
  }
});
