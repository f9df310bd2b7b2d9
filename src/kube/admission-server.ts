/**
 * The admission decision over HTTP, for a container runtime, an NRI plugin or a webhook that
 * wants to know whether this node would take a pod now (the kubelet's eviction manager Admit:
 * under MemoryPressure only BestEffort pods are refused, under any other condition all but
 * critical pods are).
 *
 *   POST /admit       body: a v1.Pod, a PodSpec (policy model), or an admission.k8s.io/v1
 *                     AdmissionReview whose request.object is a Pod
 *                     answer: {admit, reason?, message?, conditions} (AdmissionReview: a review
 *                     response with allowed and status)
 *   GET  /conditions  answer: {conditions: [...]}
 *
 * The decision function and the current conditions are injected: the agent passes the
 * policy's admit() and its live condition set.
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { boundedServer, HTTP_BOUNDS, type HttpBounds, type ServerTls } from '../net/http-bounds';
import { fromV1Pod, type V1Pod } from './pod-spec';
import { silentLog, type Log } from '../log';
import type { NodeCondition, PodSpec, Toleration } from '../policy/types';

export interface AdmissionDecision {
  admit: boolean;
  reason?: string;
  message?: string;
}

export interface AdmissionHandlerOptions {
  decide: (pod: PodSpec, conditions: NodeCondition[]) => AdmissionDecision;
  conditions: () => NodeCondition[];
  /**
   * Why the conditions cannot be vouched for now (no pass for too long: a wedged loop), or
   * null. While stale, /admit and /conditions answer 503: an old "no pressure" must not admit
   * pods onto a node that may be out of memory by now (the caller falls back to its own rule;
   * a webhook to its failurePolicy).
   */
  stale?: () => string | null;
  /**
   * Told of each decision made, after it is made (`--record`: the recording holds the answers
   * given, with the pod and conditions they were given on). A hook that throws is logged; the
   * answer still goes out.
   */
  onDecision?: (pod: PodSpec, conditions: NodeCondition[], decision: AdmissionDecision) => void;
  log?: Log;
}

const MAX_BODY = 1 << 20;

class BadRequest extends Error {}

/** Reads a pod out of any of the accepted bodies; throws BadRequest naming the field. */
export function podFromBody(body: unknown): { pod: PodSpec; reviewUid?: string } {
  if (!body || typeof body !== 'object') throw new BadRequest('body: must be a JSON object');
  const b = body as Record<string, unknown>;
  if (b.kind === 'AdmissionReview') {
    const req = b.request as { uid?: string; object?: V1Pod } | undefined;
    if (!req?.uid) throw new BadRequest('request.uid: missing');
    if (!req.object) throw new BadRequest('request.object: missing');
    const p = fromV1Pod(withDefaults(req.object));
    if (!p) throw new BadRequest('request.object.metadata.name: missing');
    return { pod: p.spec, reviewUid: req.uid };
  }
  if (b.metadata !== undefined || b.spec !== undefined) {
    const p = fromV1Pod(withDefaults(b as V1Pod));
    if (!p) throw new BadRequest('metadata.name: missing');
    return { pod: p.spec };
  }
  if (Array.isArray(b.containers) && typeof b.name === 'string') {
    // a PodSpec from the policy model arrives with quantities as strings: go through fromV1Pod
    // so they are parsed exactly as an API pod's would be
    type Wire = { name?: string; requests?: Record<string, string>; limits?: Record<string, string> };
    const s = b as unknown as {
      namespace?: string;
      name: string;
      uid?: string;
      priority?: number;
      annotations?: Record<string, string>;
      containers: Wire[];
      initContainers?: Wire[];
      tolerations?: unknown[];
    };
    const container = (c: Wire) => ({ name: c.name, resources: { requests: c.requests, limits: c.limits } });
    const asV1: V1Pod = {
      metadata: { name: s.name, namespace: s.namespace, uid: s.uid || 'unknown', annotations: s.annotations },
      spec: {
        priority: s.priority,
        containers: s.containers.map(container),
        initContainers: (s.initContainers ?? []).map(container),
        tolerations: s.tolerations as Toleration[] | undefined,
      },
    };
    const p = fromV1Pod(asV1);
    if (!p) throw new BadRequest('name: missing');
    return { pod: p.spec };
  }
  throw new BadRequest('body: not a v1.Pod, a PodSpec or an AdmissionReview');
}

/** A pod being created has no uid yet; the policy does not need one to decide. */
function withDefaults(pod: V1Pod): V1Pod {
  const md = pod.metadata ?? {};
  return { ...pod, metadata: { ...md, uid: md.uid || 'pending', name: md.name || (md as { generateName?: string }).generateName } };
}

/** The decision to the hook, if any: a hook that fails never changes or holds the answer. */
function tell(opts: AdmissionHandlerOptions, log: Log, pod: PodSpec, conditions: NodeCondition[], decision: AdmissionDecision): void {
  if (!opts.onDecision) return;
  try {
    opts.onDecision(pod, conditions, decision);
  } catch (err) {
    log.warn({ err: String(err) }, 'kube: admission decision hook failed');
  }
}

/** The request handler alone, so the agent can mount it on its metrics/health server. */
export function admissionHandler(opts: AdmissionHandlerOptions): (req: http.IncomingMessage, res: http.ServerResponse) => void {
  const log = opts.log ?? silentLog;
  const send = (res: http.ServerResponse, code: number, body: unknown) => {
    const text = JSON.stringify(body);
    res.writeHead(code, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
    res.end(text);
  };
  const unknown = (res: http.ServerResponse): boolean => {
    const why = opts.stale?.() ?? null;
    if (why !== null) send(res, 503, { error: `node conditions unknown: ${why}` });
    return why !== null;
  };
  return (req, res) => {
    const url = (req.url ?? '/').split('?')[0];
    if (req.method === 'GET' && url === '/conditions') {
      if (unknown(res)) return;
      return send(res, 200, { conditions: opts.conditions() });
    }
    if (url !== '/admit') return send(res, 404, { error: `no such path: ${url}` });
    if (req.method !== 'POST') return send(res, 405, { error: 'POST a pod to /admit' });
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY) {
        send(res, 413, { error: `body: larger than ${MAX_BODY} bytes` });
        req.destroy();
      } else chunks.push(c);
    });
    req.on('end', () => {
      if (res.headersSent) return;
      let parsed: unknown;
      try {
        parsed = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        return send(res, 400, { error: 'body: not JSON' });
      }
      try {
        const { pod, reviewUid } = podFromBody(parsed);
        if (unknown(res)) return;
        const conditions = opts.conditions();
        const decision = opts.decide(pod, conditions);
        log.debug({ pod: `${pod.namespace}/${pod.name}`, ...decision }, 'kube: admission decision');
        tell(opts, log, pod, conditions, decision);
        if (reviewUid !== undefined) {
          const response: Record<string, unknown> = { uid: reviewUid, allowed: decision.admit };
          if (!decision.admit) response.status = { code: 403, reason: decision.reason, message: decision.message };
          return send(res, 200, { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response });
        }
        return send(res, 200, { ...decision, conditions });
      } catch (err) {
        if (err instanceof BadRequest) return send(res, 400, { error: err.message });
        log.error({ err: String(err) }, 'kube: admission check failed');
        return send(res, 500, { error: 'internal error' });
      }
    });
  };
}

export interface AdmissionServer {
  /** where it listens: "HOST:PORT" or "unix:PATH" */
  readonly address: string;
  /** the TCP port (0 on a unix socket) */
  readonly port: number;
  close(): Promise<void>;
}

/**
 * Where /admit listens, and who may ask. Its answers let pods onto the node, so by default only
 * the node's own processes reach it: a unix socket (mode 0600: the agent's user) or loopback.
 * Beyond loopback, TLS with client certificates is required (run-settings.ts refuses the start
 * otherwise).
 */
export type AdmissionListen = { path: string } | { host: string; port: number; tls?: ServerTls };

/** Listens on host:port (default 127.0.0.1, port 0 = any free port) or on a unix socket. */
export async function startAdmissionServer(opts: AdmissionHandlerOptions & { listen?: AdmissionListen; bounds?: HttpBounds }): Promise<AdmissionServer> {
  const listen = opts.listen ?? { host: '127.0.0.1', port: 0 };
  const server = boundedServer(admissionHandler(opts), opts.bounds ?? HTTP_BOUNDS, 'tls' in listen ? listen.tls : undefined);
  if ('path' in listen) {
    replaceStaleSocket(listen.path);
    // Created owner-only (connecting takes write permission on the socket), whatever the umask.
    const umask = process.umask(0o177);
    try {
      await listenOn(server, (cb) => server.listen(listen.path, cb));
    } finally {
      process.umask(umask);
    }
    return {
      address: `unix:${listen.path}`,
      port: 0,
      close: () => new Promise<void>((r) => server.close(() => r())),
    };
  }
  await listenOn(server, (cb) => server.listen(listen.port, listen.host, cb));
  const port = (server.address() as AddressInfo).port;
  return {
    address: `${listen.host.includes(':') ? `[${listen.host}]` : listen.host}:${port}`,
    port,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

function listenOn(server: http.Server, listen: (cb: () => void) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    listen(() => {
      server.off('error', reject);
      resolve();
    });
  });
}

/** A socket left by an agent that did not stop cleanly is removed; anything else there is an error (EEXIST). */
function replaceStaleSocket(file: string): void {
  let st: fs.Stats;
  try {
    st = fs.lstatSync(file);
  } catch {
    return;
  }
  if (!st.isSocket()) throw Object.assign(new Error(`${file}: exists and is not a socket`), { code: 'EEXIST' });
  fs.unlinkSync(file);
}
