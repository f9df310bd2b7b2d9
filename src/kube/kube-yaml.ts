/**
 * YAML as Kubernetes' Go code reads it, for the files evictd reads that a Go component reads too:
 * the kubelet's `--config` (a KubeletConfiguration) and a kubeconfig.
 *
 * Both go through sigs.k8s.io/yaml v1.6.0 `YAMLToJSON` (kubernetes v1.34 to v1.36): go-yaml v2
 * (go.yaml.in/yaml/v2 v2.4.x) decodes the document into `interface{}` with YAML 1.1's implicit
 * types (its resolve.go), `convertToJSONableObject` turns map keys into strings (no target type,
 * so no value is turned into a string), and encoding/json writes the JSON that the v1beta1 types
 * are then decoded from. So, unquoted:
 * - `y Y yes Yes YES true True TRUE on On ON` are true, `n N no No NO false False FALSE off Off
 *   OFF` false (other spellings, `yEs`, stay strings); `~ null Null NULL` and nothing are null;
 * - an integer is Go's `strconv.ParseInt(s, 0, 64)` of the text without its underscores: `0777`
 *   is octal (511), `0o17`, `0x1F`, `0b101` too, a sign is allowed (`+30`); past int64, uint64;
 * - a float is `[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?` (again without underscores),
 *   or `.inf`, `-.inf`, `.nan` and their `Inf`/`INF`, `NaN`/`NAN` spellings; one past float64's
 *   range stays a string; a whole float is written to JSON as an integer (`30.0` is `30`);
 * - sexagesimal (`1:30`) is not a number (go-yaml dropped it), nor is a timestamp (kept as its text);
 * - `.nan` and `.inf` as a value fail the whole decode (encoding/json cannot write them);
 * - a key is made a string: an int in decimal, a float as Go's `%g` of its float32, a bool as
 *   `true`/`false`; a null key (`~: x`) or one past int64 fails the decode;
 * - merge keys `<<` are go-yaml v2's: merged maps are written into the map in order, over keys
 *   set before them (`a: 1` then `<<: {a: 2}` gives 2), and a key after them overrides them; in a
 *   list of maps to merge, the first wins.
 * The kubelet's file is read as JSON, not YAML, when its first character that is not white space
 * is `{` (apimachinery's recognizer: `utilyaml.IsJSONBuffer`); a kubeconfig always as YAML.
 *
 * Where evictd refuses what Go takes: a key given twice in one map (the kubelet's strict pass
 * refuses it, then its lenient pass keeps the last; evictd says which key), and a later
 * document's syntax. Where evictd takes what go-yaml refuses: an alias inside its own anchor
 * (`&a {x: *a}`) becomes a value that contains itself, which every field refuses by name.
 */
import YAML, { type Document, type Node } from 'yaml';

/** A YAML problem as the yaml package reports one (yamlProblem reads code, pos and linePos). */
export class KubeYamlError extends Error {
  override readonly name = 'KubeYamlError';
  constructor(
    message: string,
    readonly code: string,
    readonly pos: [number, number],
    readonly linePos: [{ line: number; col: number }],
  ) {
    super(message);
  }
}

const TAG = 'tag:yaml.org,2002:';
const STR = `${TAG}str`;
const BOOL = `${TAG}bool`;
const INT = `${TAG}int`;
const FLOAT = `${TAG}float`;
const NULL = `${TAG}null`;
const TIMESTAMP = `${TAG}timestamp`;
const BINARY = `${TAG}binary`;
const MERGE = `${TAG}merge`;

/** A value as go-yaml v2 decodes it into interface{} (int and uint apart: they are other Go types). */
type GoValue =
  | { t: 'null' }
  | { t: 'bool'; v: boolean }
  | { t: 'int' | 'uint'; v: bigint }
  | { t: 'float'; v: number }
  | { t: 'str'; v: string }
  | { t: 'map'; m: Map<string, { key: GoValue; value: GoValue }>; at: number }
  | { t: 'seq'; items: GoValue[] };

const NULL_VALUE: GoValue = { t: 'null' };

// resolve.go's resolveMap: the plain scalars looked up whole.
const WORDS = new Map<string, GoValue>();
for (const [value, words] of [
  [{ t: 'bool', v: true }, 'y Y yes Yes YES true True TRUE on On ON'],
  [{ t: 'bool', v: false }, 'n N no No NO false False FALSE off Off OFF'],
  [NULL_VALUE, '~ null Null NULL'],
  [{ t: 'float', v: NaN }, '.nan .NaN .NAN'],
  [{ t: 'float', v: Infinity }, '.inf .Inf .INF +.inf +.Inf +.INF'],
  [{ t: 'float', v: -Infinity }, '-.inf -.Inf -.INF'],
] as [GoValue, string][]) {
  for (const w of words.split(' ')) WORDS.set(w, value);
}
WORDS.set('', NULL_VALUE);

/** resolve.go's resolveTable: the first characters that may start anything but a string. */
function hint(text: string): 'M' | '.' | 'D' | 'S' | 'N' | null {
  if (text === '') return 'N';
  const c = text[0]!;
  if (c === '+' || c === '-') return 'S';
  if (c >= '0' && c <= '9') return 'D';
  if ('yYnNtTfFoO~'.includes(c)) return 'M';
  if (c === '.') return '.';
  return null;
}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const UINT64_MAX = 2n ** 64n - 1n;

/** strconv.ParseUint(s, 0, 64) of a text without underscores; null on a syntax or range error. */
function parseUint(s: string): bigint | null {
  if (s === '') return null;
  let digits = s;
  let base = 10;
  if (s[0] === '0') {
    const p = s.length >= 3 ? s[1]!.toLowerCase() : '';
    base = p === 'b' ? 2 : p === 'x' ? 16 : 8;
    digits = p === 'b' || p === 'o' || p === 'x' ? s.slice(2) : s.slice(1);
  }
  const ok = { 2: /^[01]*$/, 8: /^[0-7]*$/, 10: /^[0-9]*$/, 16: /^[0-9a-fA-F]*$/ }[base as 2 | 8 | 10 | 16];
  if (!ok.test(digits)) return null;
  let n = 0n;
  for (const c of digits) n = n * BigInt(base) + BigInt(parseInt(c, 16));
  return n > UINT64_MAX ? null : n;
}

/** strconv.ParseInt(s, 0, 64). */
function parseInt64(s: string): bigint | null {
  const neg = s[0] === '-';
  const u = parseUint(s[0] === '+' || s[0] === '-' ? s.slice(1) : s);
  if (u === null) return null;
  const n = neg ? -u : u;
  return n < INT64_MIN || n > INT64_MAX ? null : n;
}

/** strconv's underscoreOK: an underscore only between digits (or after a base prefix). */
function underscoreOK(text: string): boolean {
  let s = text[0] === '-' || text[0] === '+' ? text.slice(1) : text;
  let saw = '^';
  let hex = false;
  if (s.length >= 2 && s[0] === '0' && 'bBoOxX'.includes(s[1]!)) {
    hex = 'xX'.includes(s[1]!);
    saw = '0';
    s = s.slice(2);
  }
  for (const c of s) {
    if ((c >= '0' && c <= '9') || (hex && /[a-fA-F]/.test(c))) saw = '0';
    else if (c === '_') {
      if (saw !== '0') return false;
      saw = '_';
    } else {
      if (saw === '_') return false;
      saw = '!';
    }
  }
  return saw !== '_';
}

const YAML_STYLE_FLOAT = /^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$/;
// time.Parse's formats in resolve.go's parseTimestamp, near enough to tell a !!timestamp from junk
const TIMESTAMP_TEXT = /^\d{4}-\d\d?-\d\d?(([Tt]\d\d?:\d\d?:\d\d?(\.\d+)?(Z|[+-]\d\d:\d\d))|( \d\d?:\d\d?:\d\d?(\.\d+)?))?$/;

const goInt = (n: bigint): GoValue => ({ t: 'int', v: n });

/** go-yaml v2 resolve(tag, in) for a plain scalar without a tag, as it comes out in interface{}. */
function resolvePlain(text: string): GoValue {
  const h = hint(text);
  if (h === null) return { t: 'str', v: text };
  const word = WORDS.get(text);
  if (word) return word;
  if (h === '.') {
    // strconv.ParseFloat of the text as it is (it takes underscores between digits)
    if (underscoreOK(text) && /^\.[0-9]+([eE][-+]?[0-9]+)?$/.test(text.replace(/_/g, ''))) {
      const f = Number(text.replace(/_/g, ''));
      if (Number.isFinite(f)) return { t: 'float', v: f };
    }
  } else if (h === 'D' || h === 'S') {
    // a timestamp (2001-12-14) comes out in interface{} as its text; the number tries follow
    const plain = text.replace(/_/g, '');
    const i = parseInt64(plain);
    if (i !== null) return goInt(i);
    if (!plain.startsWith('+') && !plain.startsWith('-')) {
      const u = parseUint(plain);
      if (u !== null) return { t: 'uint', v: u };
    }
    if (YAML_STYLE_FLOAT.test(plain)) {
      const f = Number(plain);
      if (Number.isFinite(f)) return { t: 'float', v: f }; // past float64: ParseFloat's range error, a string
    }
  }
  return { t: 'str', v: text };
}

const SHORT = (tag: string) => (tag.startsWith(TAG) ? `!!${tag.slice(TAG.length)}` : tag);

/** A scalar as go-yaml v2 decodes it into interface{} (decode.go scalar, resolve.go resolve). */
function scalarValue(node: YAML.Scalar, fail: (message: string) => never): GoValue {
  const text = node.source ?? String(node.value ?? '');
  const tag = node.tag;
  if (tag === undefined || tag === '') return node.type === 'PLAIN' || node.type === undefined ? resolvePlain(text) : { t: 'str', v: text };
  if (tag === BINARY) {
    const b64 = text.replace(/[\r\n]/g, '');
    if (b64.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(b64)) fail('yaml: !!binary value contains invalid base64 data');
    return { t: 'str', v: Buffer.from(b64, 'base64').toString('utf8') };
  }
  // a tag go-yaml does not resolve (`!`, `!foo`, `!!set`) leaves the text, a string
  if (tag === STR || ![BOOL, INT, FLOAT, NULL, TIMESTAMP].includes(tag)) return { t: 'str', v: text };
  // an explicit tag: the text must resolve to it (a timestamp is tried only under its own tag)
  const h = hint(text);
  if (tag === TIMESTAMP && (h === 'D' || h === 'S') && TIMESTAMP_TEXT.test(text)) return { t: 'str', v: text };
  const got = resolvePlain(text);
  const gotTag = { null: NULL, bool: BOOL, int: INT, uint: INT, float: FLOAT, str: STR, map: STR, seq: STR }[got.t];
  if (gotTag === tag) return got;
  if (tag === FLOAT && got.t === 'int') return { t: 'float', v: Number(got.v) };
  return fail(`yaml: cannot decode ${SHORT(gotTag)} \`${text}\` as a ${SHORT(tag)}`);
}

/** go-yaml v2's defence against alias bombs (decode.go allowedAliasRatio). */
function allowedAliasRatio(decodeCount: number): number {
  if (decodeCount <= 400_000) return 0.99;
  if (decodeCount >= 4_000_000) return 0.1;
  return 0.99 - 0.89 * ((decodeCount - 400_000) / 3_600_000);
}

/** Go's strconv.FormatFloat(f, 'g', -1, 32), as sigs.k8s.io/yaml names a float key. */
function formatFloat32(f: number): string {
  const x = Math.fround(f);
  if (Number.isNaN(x)) return '.nan';
  if (x === Infinity) return '.inf';
  if (x === -Infinity) return '-.inf';
  if (x === 0) return Object.is(x, -0) ? '-0' : '0';
  let e = '';
  for (let p = 1; p <= 9; p++) {
    e = Math.abs(x).toExponential(p - 1);
    if (Math.fround(Number(e)) === Math.abs(x)) break;
  }
  const [mantissa, exponent] = e.split('e') as [string, string];
  const digits = mantissa.replace('.', '');
  const exp = Number(exponent);
  const sign = x < 0 ? '-' : '';
  if (exp < -4 || exp >= 6) {
    const frac = digits.length > 1 ? `.${digits.slice(1)}` : '';
    return `${sign}${digits[0]}${frac}e${exp < 0 ? '-' : '+'}${String(Math.abs(exp)).padStart(2, '0')}`;
  }
  if (exp < 0) return `${sign}0.${'0'.repeat(-exp - 1)}${digits}`;
  const whole = digits.slice(0, exp + 1).padEnd(exp + 1, '0');
  const frac = digits.slice(exp + 1);
  return `${sign}${whole}${frac ? `.${frac}` : ''}`;
}

let distinct = 0;

/** How a key is told apart in a Go map[interface{}]interface{} (the Go type and value). */
function keyIdentity(k: GoValue): string {
  switch (k.t) {
    case 'null':
      return 'null';
    case 'bool':
    case 'int':
    case 'uint':
    case 'str':
      return `${k.t}:${String(k.v)}`;
    case 'float':
      return Number.isNaN(k.v) ? `nan:${distinct++}` : `float:${k.v === 0 ? 0 : k.v}`; // NaN is never equal; -0 == 0
    default:
      return `${k.t}:${distinct++}`;
  }
}

/** Reading a document the Go way: YAML (go-yaml v2) or JSON (encoding/json). */
class Reader {
  private decodeCount = 0;
  private aliasCount = 0;
  private aliasDepth = 0;
  /** nodes being decoded, with what they are becoming (an alias inside its own anchor) */
  private readonly open = new Map<Node, GoValue>();
  /** each alias's node: the last anchor of its name before it (Alias.resolve walks the document each time) */
  private readonly targets = new Map<YAML.Alias, Node>();

  constructor(
    doc: Document,
    private readonly text: string,
    private readonly json: boolean,
  ) {
    const anchors = new Map<string, Node>();
    YAML.visit(doc, {
      Node: (_, node) => {
        if (YAML.isAlias(node)) {
          const target = anchors.get(node.source);
          if (target) this.targets.set(node, target);
        } else if (node.anchor) anchors.set(node.anchor, node);
      },
    });
  }

  /** A problem at a place in the text, said by line unless the message names the place. */
  error(at: number, message: string, code = 'BAD_VALUE', byLine = code === 'BAD_VALUE'): KubeYamlError {
    const before = this.text.slice(0, at);
    const line = before.split('\n').length;
    const col = at - before.lastIndexOf('\n');
    return new KubeYamlError(byLine ? `${message} at line ${line}, column ${col}` : message, code, [at, at + 1], [{ line, col }]);
  }

  private at(node: Node | null | undefined): number {
    return node?.range?.[0] ?? 0;
  }

  decode(node: Node | null | undefined): GoValue {
    this.decodeCount++;
    if (this.aliasDepth > 0) this.aliasCount++;
    if (this.aliasCount > 100 && this.decodeCount > 1000 && this.aliasCount / this.decodeCount > allowedAliasRatio(this.decodeCount))
      throw this.error(this.at(node), 'yaml: document contains excessive aliasing');
    if (node === null || node === undefined) return NULL_VALUE;
    if (YAML.isAlias(node)) {
      const target = this.targets.get(node);
      if (!target) throw this.error(this.at(node), `yaml: unknown anchor '${node.source}' referenced`);
      const open = this.open.get(target);
      if (open) return open;
      this.aliasDepth++;
      try {
        return this.decode(target);
      } finally {
        this.aliasDepth--;
      }
    }
    if (YAML.isScalar(node)) {
      if (this.json) return this.jsonScalar(node);
      return scalarValue(node, (message) => {
        throw this.error(this.at(node), message);
      });
    }
    if (YAML.isSeq(node)) {
      const seq: GoValue = { t: 'seq', items: [] };
      this.open.set(node, seq);
      try {
        for (const item of node.items) seq.items.push(this.decode(item as Node | null));
      } finally {
        this.open.delete(node);
      }
      return seq;
    }
    if (YAML.isMap(node)) {
      const map: GoValue = { t: 'map', m: new Map(), at: this.at(node) };
      this.open.set(node, map);
      try {
        this.mapping(node, map);
      } finally {
        this.open.delete(node);
      }
      return map;
    }
    throw this.error(this.at(node), 'yaml: unsupported node');
  }

  private jsonScalar(node: YAML.Scalar): GoValue {
    const text = node.source ?? '';
    if (node.type !== 'PLAIN') return { t: 'str', v: text };
    if (text === 'true' || text === 'false') return { t: 'bool', v: text === 'true' };
    if (text === 'null') return NULL_VALUE;
    return { t: 'float', v: Number(text) }; // JSON.parse has checked it is a number
  }

  private isMergeKey(key: unknown): boolean {
    if (this.json || !YAML.isScalar(key)) return false;
    return key.source === '<<' && (key.tag === MERGE || ((key.tag === undefined || key.tag === '!') && key.type === 'PLAIN'));
  }

  /** decode.go mapping: each pair in order into `out`, a merge writing its maps over it. */
  private mapping(node: YAML.YAMLMap, out: Extract<GoValue, { t: 'map' }>): void {
    const explicit = new Set<string>();
    for (const pair of node.items) {
      if (this.isMergeKey(pair.key)) {
        this.merge(pair.value as Node | null, out);
        continue;
      }
      const keyNode = pair.key as Node | null;
      const key = this.decode(keyNode);
      if (key.t === 'map' || key.t === 'seq') throw this.error(this.at(keyNode), 'yaml: invalid map key: a map or list');
      const id = keyIdentity(key);
      if (explicit.has(id)) {
        const text = keyNode && YAML.isScalar(keyNode) ? (keyNode.source ?? '') : '';
        throw this.error(this.at(keyNode), `key ${JSON.stringify(text)} given twice`, 'DUPLICATE_KEY');
      }
      explicit.add(id);
      const value = this.decode(pair.value as Node | null);
      out.m.set(id, { key, value });
    }
  }

  /** decode.go merge: a map, an alias of one, or a list of them (the first of the list wins). */
  private merge(node: Node | null, out: Extract<GoValue, { t: 'map' }>): void {
    const wantMap = () => this.error(this.at(node), 'yaml: map merge requires map or sequence of maps as the value');
    const from = (n: Node | null): Extract<GoValue, { t: 'map' }> => {
      const target = YAML.isAlias(n) ? this.targets.get(n) : n;
      if (!YAML.isMap(target)) throw wantMap();
      const v = this.decode(n);
      if (v.t !== 'map') throw wantMap();
      return v;
    };
    const sources = YAML.isSeq(node) ? [...node.items].reverse().map((n) => from(n as Node | null)) : [from(node)];
    for (const src of sources) {
      if (src === out) continue;
      for (const [id, kv] of src.m) out.m.set(id, kv);
    }
  }

  /** convertToJSONableObject and encoding/json: the JSON value the v1beta1 types are decoded from. */
  toJSON(v: GoValue, path: string, made = new Map<GoValue, unknown>()): unknown {
    switch (v.t) {
      case 'null':
        return null;
      case 'bool':
      case 'str':
        return v.v;
      case 'int':
      case 'uint':
        return Number(v.v);
      case 'float':
        // json.Marshal refuses NaN and ±Inf, wherever they are: the whole decode fails (a JSON
        // file's 1e400 is encoding/json's to refuse in the field it is decoded into)
        if (!Number.isFinite(v.v) && !this.json) {
          const what = Number.isNaN(v.v) ? 'NaN' : v.v > 0 ? '+Inf' : '-Inf';
          throw this.error(
            0,
            `${path.replace(/\.$/, '') || 'the document'}: json: unsupported value: ${what} (the kubelet cannot turn .nan or .inf into JSON: quote it)`,
            'JSON',
          );
        }
        return v.v;
      case 'seq': {
        const done = made.get(v);
        if (done) return done;
        const out: unknown[] = [];
        made.set(v, out);
        v.items.forEach((item, i) => out.push(this.toJSON(item, `${path}[${i}]`, made)));
        return out;
      }
      case 'map': {
        const done = made.get(v);
        if (done) return done;
        const out: Record<string, unknown> = {};
        made.set(v, out);
        for (const { key, value } of v.m.values()) {
          const k = this.keyText(key, v.at);
          const value2 = this.toJSON(value, path.endsWith('.') || path === '' ? `${path}${k}` : `${path}[${JSON.stringify(k)}]`, made);
          Object.defineProperty(out, k, { value: value2, enumerable: true, writable: true, configurable: true });
        }
        return out;
      }
    }
  }

  private keyText(k: GoValue, at: number): string {
    switch (k.t) {
      case 'str':
        return k.v;
      case 'bool':
        return k.v ? 'true' : 'false';
      case 'int':
        return k.v.toString();
      case 'float':
        return formatFloat32(k.v);
      default:
        // sigs.k8s.io/yaml: "unsupported map key of type: <nil>" (or uint64)
        throw this.error(at, `yaml: unsupported map key of type: ${k.t === 'null' ? '<nil>' : 'uint64'}`);
    }
  }
}

const OPTIONS = { schema: 'failsafe', merge: false, uniqueKeys: false } as const;

/**
 * A parsed document's node read as Go reads it (`json`: as encoding/json, for a JSON file);
 * `prefix` goes before the field names in errors ("config.").
 */
export function kubeYamlNode(doc: Document, node: Node | null | undefined, text: string, json = false, prefix = ''): unknown {
  const reader = new Reader(doc, text, json);
  return reader.toJSON(reader.decode(node), prefix);
}

/** apimachinery's recognizer: a buffer whose first non-space character is `{` is JSON (utilyaml.IsJSONBuffer). */
export function isJSONBuffer(text: string): boolean {
  return /^[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]*\{/.test(text);
}

/**
 * A whole file as the kubelet reads its `--config` (apimachinery's universal decoder): JSON when
 * it starts with `{`, else YAML through sigs.k8s.io/yaml; only the first YAML document counts.
 * null for an empty file. Throws the yaml package's parse error, a SyntaxError for bad JSON, or a
 * KubeYamlError.
 */
export function readKubeletConfigText(text: string): unknown {
  if (isJSONBuffer(text)) {
    try {
      JSON.parse(text);
    } catch (err) {
      throw new SyntaxError(`read as JSON, as the kubelet reads a file that starts with "{": ${(err as Error).message}`, { cause: err });
    }
    return readFirstDocument(text, true);
  }
  return readFirstDocument(text, false);
}

/** A whole file as sigs.k8s.io/yaml YAMLToJSON reads it (a kubeconfig: client-go's loader). */
export function readKubeYaml(text: string): unknown {
  return readFirstDocument(text, false);
}

function readFirstDocument(text: string, json: boolean): unknown {
  const docs = YAML.parseAllDocuments(text, OPTIONS);
  const doc = docs[0];
  if (!doc) return null;
  // the yaml package's own reading of a tag is not Go's: the tags are resolved here
  const errors = doc.errors.filter((e) => e.code !== 'TAG_RESOLVE_FAILED');
  if (errors.length > 0) throw errors[0];
  return kubeYamlNode(doc, doc.contents, text, json);
}
