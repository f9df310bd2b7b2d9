/**
 * A local HTTP server (127.0.0.1, random port) that speaks the API server endpoints evictd
 * uses, with the API server's semantics where evictd depends on them:
 *   GET   /api/v1/pods?fieldSelector=spec.nodeName=N            list, metadata.resourceVersion
 *   GET   /api/v1/pods?...&watch=true&resourceVersion=RV       events after RV, then live;
 *                                                               410 for a compacted RV
 *   GET   /api/v1/namespaces/NS/pods/NAME                       one pod
 *   PATCH /api/v1/namespaces/NS/pods/NAME/status                strategic merge (conditions by
 *                                                               type), metadata.uid precondition
 *   POST  /api/v1/namespaces/NS/events                          409 AlreadyExists on a taken name
 * Faults are injected per request: an HTTP status, a delay (before or after applying a write),
 * a reset connection, an ERROR event in a watch. Test-only; not part of evictd.
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Pod {
  metadata: { name: string; namespace: string; uid: string; resourceVersion?: string; annotations?: Record<string, string>; [k: string]: unknown };
  spec: { nodeName?: string; [k: string]: unknown };
  status?: { phase?: string; reason?: string; message?: string; conditions?: { type: string; [k: string]: unknown }[]; [k: string]: unknown };
}

export interface Fault {
  /** which requests: e.g. r => r.method === 'PATCH' */
  match: (r: RequestInfo) => boolean;
  /** answer this HTTP status (metav1.Status body) without applying */
  status?: number;
  /** wait this long before answering (after applying, for writes: an ambiguous outcome) */
  delayMs?: number;
  /** destroy the socket: before applying, or after applying when `afterApply` */
  reset?: boolean;
  afterApply?: boolean;
  /** for a watch: send this ERROR event (metav1.Status code) right after opening */
  watchErrorCode?: number;
  /** how many matching requests it hits (default 1) */
  times?: number;
}

export interface RequestInfo {
  method: string;
  path: string;
  query: URLSearchParams;
  body?: unknown;
  contentType?: string;
  auth?: string;
}

interface HistoryEntry {
  rv: number;
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  pod: Pod;
}

interface Watcher {
  node: string;
  res: http.ServerResponse;
  sent: number;
}

export class FakeApiServer {
  readonly requests: RequestInfo[] = [];
  /** status patches that changed a pod, and events created */
  readonly statusWrites: { name: string; patch: unknown }[] = [];
  readonly events: Record<string, unknown>[] = [];
  readonly faults: Fault[] = [];
  token?: string;
  /** the node whose kubelet /pods this server also plays */
  kubeletNode = 'node-a';
  /** Node objects by name: what GET /api/v1/nodes/NAME answers (404 for any other) */
  readonly nodes = new Map<string, Record<string, unknown>>();
  private readonly pods = new Map<string, Pod>();
  private readonly history: HistoryEntry[] = [];
  private rv = 100;
  private compactedRv = 0;
  private readonly watchers = new Set<Watcher>();
  private readonly server = http.createServer((req, res) => this.handle(req, res));
  private readonly sockets = new Set<import('node:net').Socket>();

  async start(): Promise<string> {
    this.server.on('connection', (s) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', () => r()));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    for (const w of this.watchers) w.res.destroy();
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((r) => this.server.close(() => r()));
  }

  get resourceVersion(): string {
    return String(this.rv);
  }

  get openWatches(): number {
    return this.watchers.size;
  }

  pod(namespace: string, name: string): Pod | undefined {
    return this.pods.get(`${namespace}/${name}`);
  }

  addPod(pod: Pod): Pod {
    const p = structuredClone(pod);
    p.metadata.resourceVersion = String(++this.rv);
    this.pods.set(`${p.metadata.namespace}/${p.metadata.name}`, p);
    this.record('ADDED', p);
    return p;
  }

  updatePod(namespace: string, name: string, change: (p: Pod) => void): Pod {
    const p = this.pods.get(`${namespace}/${name}`);
    if (!p) throw new Error(`no pod ${namespace}/${name}`);
    change(p);
    p.metadata.resourceVersion = String(++this.rv);
    this.record('MODIFIED', p);
    return p;
  }

  deletePod(namespace: string, name: string): void {
    const p = this.pods.get(`${namespace}/${name}`);
    if (!p) throw new Error(`no pod ${namespace}/${name}`);
    this.pods.delete(`${namespace}/${name}`);
    p.metadata.resourceVersion = String(++this.rv);
    this.record('DELETED', p);
  }

  /** Forget history up to now: a watch from an older resourceVersion gets 410 Gone. */
  compact(): void {
    this.compactedRv = this.rv;
    this.history.length = 0;
  }

  /** Cut every open watch connection (a load balancer dropping long streams). */
  dropWatches(): void {
    for (const w of this.watchers) w.res.socket?.destroy();
    this.watchers.clear();
  }

  /** End every open watch cleanly (the server's timeoutSeconds). */
  endWatches(): void {
    for (const w of this.watchers) w.res.end();
    this.watchers.clear();
  }

  bookmark(): void {
    for (const w of this.watchers)
      this.send(w, { type: 'BOOKMARK', object: { kind: 'Pod', apiVersion: 'v1', metadata: { resourceVersion: String(this.rv) } } });
  }

  private record(type: HistoryEntry['type'], pod: Pod): void {
    const entry = { rv: this.rv, type, pod: structuredClone(pod) };
    this.history.push(entry);
    for (const w of this.watchers) if (pod.spec.nodeName === w.node) this.send(w, { type, object: entry.pod });
  }

  private send(w: Watcher, ev: unknown): void {
    w.sent++;
    w.res.write(JSON.stringify(ev) + '\n');
  }

  private takeFault(info: RequestInfo): Fault | undefined {
    const i = this.faults.findIndex((f) => f.match(info));
    if (i < 0) return undefined;
    const f = this.faults[i];
    f.times = (f.times ?? 1) - 1;
    if (f.times <= 0) this.faults.splice(i, 1);
    return f;
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://x');
      const text = Buffer.concat(chunks).toString('utf8');
      const info: RequestInfo = {
        method: req.method ?? 'GET',
        path: url.pathname,
        query: url.searchParams,
        body: text ? JSON.parse(text) : undefined,
        contentType: req.headers['content-type'],
        auth: req.headers.authorization,
      };
      this.requests.push(info);
      if (this.token && info.auth !== `Bearer ${this.token}`) return status(res, 401, 'Unauthorized', 'no valid token');
      const fault = this.takeFault(info);
      if (fault?.reset && !fault.afterApply) return void req.socket.destroy();
      if (fault?.status) {
        const answer = () =>
          status(res, fault.status!, fault.status === 410 ? 'Expired' : (http.STATUS_CODES[fault.status!] ?? 'Error'), `injected ${fault.status}`);
        if (fault.delayMs) setTimeout(answer, fault.delayMs);
        else answer();
        return;
      }
      const respond = (code: number, body: unknown) => {
        if (fault?.reset) return void req.socket.destroy();
        const out = () => {
          if (res.destroyed) return;
          res.writeHead(code, { 'Content-Type': 'application/json' });
          res.end(JSON.stringify(body));
        };
        if (fault?.delayMs) setTimeout(out, fault.delayMs);
        else out();
      };
      this.route(info, req, res, respond, fault);
    });
  }

  private route(info: RequestInfo, req: http.IncomingMessage, res: http.ServerResponse, respond: (code: number, body: unknown) => void, fault?: Fault): void {
    const parts = info.path.split('/').filter(Boolean); // api v1 ...
    if (info.method === 'GET' && info.path === '/pods') {
      // the kubelet's own endpoint: its node's pods, no resourceVersion semantics
      const items = [...this.pods.values()].filter((p) => p.spec.nodeName === this.kubeletNode);
      return respond(200, { kind: 'PodList', apiVersion: 'v1', metadata: {}, items });
    }
    if (info.method === 'GET' && info.path === '/api/v1/pods') {
      const sel = info.query.get('fieldSelector') ?? '';
      const m = /^spec\.nodeName=(.+)$/.exec(sel);
      if (!m) return status(res, 400, 'BadRequest', 'test server needs fieldSelector=spec.nodeName=...');
      const node = m[1];
      if (info.query.get('watch') === 'true' || info.query.get('watch') === '1') return this.watch(info, req, res, node, fault);
      const items = [...this.pods.values()].filter((p) => p.spec.nodeName === node);
      return respond(200, { kind: 'PodList', apiVersion: 'v1', metadata: { resourceVersion: String(this.rv) }, items });
    }
    if (info.method === 'GET' && parts[0] === 'api' && parts[1] === 'v1' && parts[2] === 'nodes' && parts.length === 4) {
      const n = this.nodes.get(decodeURIComponent(parts[3]));
      return n ? respond(200, n) : status(res, 404, 'NotFound', `nodes "${parts[3]}" not found`);
    }
    if (parts[0] === 'api' && parts[1] === 'v1' && parts[2] === 'namespaces') {
      const ns = decodeURIComponent(parts[3]);
      if (parts[4] === 'pods' && parts.length === 6 && info.method === 'GET') {
        const p = this.pods.get(`${ns}/${decodeURIComponent(parts[5])}`);
        return p ? respond(200, p) : status(res, 404, 'NotFound', `pods "${parts[5]}" not found`);
      }
      if (parts[4] === 'pods' && parts[6] === 'status' && info.method === 'PATCH')
        return this.patchStatus(info, ns, decodeURIComponent(parts[5]), res, respond);
      if (parts[4] === 'events' && parts.length === 5 && info.method === 'POST') {
        const ev = info.body as { metadata?: { name?: string; namespace?: string } };
        const name = ev.metadata?.name;
        if (!name) return status(res, 422, 'Invalid', 'metadata.name: Required value');
        if (ev.metadata?.namespace && ev.metadata.namespace !== ns) return status(res, 400, 'BadRequest', 'namespace mismatch');
        if (
          this.events.some(
            (e) =>
              (e as { metadata: { name: string; namespace: string } }).metadata.name === name &&
              (e as { metadata: { namespace: string } }).metadata.namespace === ns,
          )
        ) {
          return status(res, 409, 'AlreadyExists', `events "${name}" already exists`);
        }
        const stored = { ...(info.body as object), metadata: { ...(ev.metadata ?? {}), namespace: ns } } as Record<string, unknown>;
        this.events.push(stored);
        return respond(201, stored);
      }
    }
    status(res, 404, 'NotFound', `no route ${info.method} ${info.path}`);
  }

  private patchStatus(info: RequestInfo, ns: string, name: string, res: http.ServerResponse, respond: (code: number, body: unknown) => void): void {
    if (info.contentType !== 'application/strategic-merge-patch+json') return status(res, 415, 'UnsupportedMediaType', `content type ${info.contentType}`);
    const p = this.pods.get(`${ns}/${name}`);
    if (!p) return status(res, 404, 'NotFound', `pods "${name}" not found`);
    const patch = info.body as { metadata?: { uid?: string }; status?: Pod['status'] };
    if (patch.metadata?.uid && patch.metadata.uid !== p.metadata.uid) {
      return status(res, 409, 'Conflict', `Precondition failed: UID in precondition: ${patch.metadata.uid}, UID in object meta: ${p.metadata.uid}`);
    }
    const before = JSON.stringify(p.status ?? {});
    const st = (p.status ??= {});
    for (const [k, v] of Object.entries(patch.status ?? {})) {
      if (k !== 'conditions') (st as Record<string, unknown>)[k] = v;
    }
    // strategic merge: conditions merge by their "type" key
    for (const c of patch.status?.conditions ?? []) {
      const list = (st.conditions ??= []);
      const i = list.findIndex((x) => x.type === c.type);
      if (i >= 0) list[i] = { ...list[i], ...c };
      else list.push(c);
    }
    if (JSON.stringify(st) !== before) {
      p.metadata.resourceVersion = String(++this.rv);
      this.record('MODIFIED', p);
      this.statusWrites.push({ name: `${ns}/${name}`, patch });
    }
    respond(200, p);
  }

  private watch(info: RequestInfo, req: http.IncomingMessage, res: http.ServerResponse, node: string, fault?: Fault): void {
    const from = Number(info.query.get('resourceVersion') ?? '0');
    if (from !== 0 && from < this.compactedRv) {
      return status(res, 410, 'Expired', `too old resource version: ${from} (${this.compactedRv})`);
    }
    res.writeHead(200, { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' });
    const w: Watcher = { node, res, sent: 0 };
    if (fault?.watchErrorCode) {
      this.send(w, {
        type: 'ERROR',
        object: {
          kind: 'Status',
          apiVersion: 'v1',
          status: 'Failure',
          code: fault.watchErrorCode,
          reason: fault.watchErrorCode === 410 ? 'Expired' : 'InternalError',
          message: 'injected',
        },
      });
      res.end();
      return;
    }
    if (from === 0) {
      for (const p of this.pods.values()) if (p.spec.nodeName === node) this.send(w, { type: 'ADDED', object: p });
    } else {
      for (const h of this.history) if (h.rv > from && h.pod.spec.nodeName === node) this.send(w, { type: h.type, object: h.pod });
    }
    res.flushHeaders();
    this.watchers.add(w);
    const timeout = Number(info.query.get('timeoutSeconds') ?? '0');
    const timer = timeout > 0 ? setTimeout(() => res.end(), timeout * 1000) : undefined;
    req.socket.on('close', () => {
      clearTimeout(timer);
      this.watchers.delete(w);
    });
    res.on('finish', () => {
      clearTimeout(timer);
      this.watchers.delete(w);
    });
  }
}

function status(res: http.ServerResponse, code: number, reason: string, message: string): void {
  if (res.headersSent || res.destroyed) return;
  res.writeHead(code, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', code, reason, message }));
}

/** A v1.Pod for tests. */
export function makePod(
  name: string,
  opts: {
    node?: string;
    uid?: string;
    namespace?: string;
    priority?: number;
    memRequest?: string;
    memLimit?: string;
    annotations?: Record<string, string>;
    phase?: string;
  } = {},
): Pod {
  const resources: Record<string, Record<string, string>> = {};
  if (opts.memRequest) resources.requests = { memory: opts.memRequest, cpu: '100m' };
  if (opts.memLimit) resources.limits = { memory: opts.memLimit, cpu: '100m' };
  return {
    metadata: { name, namespace: opts.namespace ?? 'default', uid: opts.uid ?? `uid-${name}`, annotations: opts.annotations },
    spec: {
      nodeName: opts.node ?? 'node-a',
      priority: opts.priority,
      terminationGracePeriodSeconds: 30,
      containers: [{ name: 'main', resources }],
    },
    status: { phase: opts.phase ?? 'Running' },
  };
}

/** A kubeconfig file at `file` that points at `url` with a bearer token, as the tests' clients use. */
export function writeKubeconfig(file: string, url: string): string {
  fs.writeFileSync(
    file,
    [
      'apiVersion: v1',
      'kind: Config',
      'current-context: t',
      'contexts: [{name: t, context: {cluster: c, user: u}}]',
      `clusters: [{name: c, cluster: {server: "${url}"}}]`,
      'users: [{name: u, user: {token: t0k3n}}]',
    ].join('\n'),
  );
  return file;
}
