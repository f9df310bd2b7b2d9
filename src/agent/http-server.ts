/**
 * /metrics (Prometheus text) and /healthz on the metrics address. Healthy means (Agent.health):
 * the loop has completed a pass recently and the runtime has not failed every listing for as
 * long, so a wedged loop or a dead runtime shows up as 503 with the reason, and one missed
 * deadline does not.
 */
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import { boundedServer } from '../net/http-bounds';

export interface Health {
  ok: boolean;
  reason: string;
}

export interface MetricsServer {
  readonly address: string;
  close(): Promise<void>;
}

/** Parses "host:port" ("127.0.0.1:9741", ":9741", "[::1]:9741"); port 0 picks a free one. */
export function parseListenAddress(text: string): { host: string; port: number } | null {
  const m = /^(?:\[([^\]]+)\]|([^:]*)):(\d{1,5})$/.exec(text);
  if (!m) return null;
  const port = Number(m[3]);
  if (port > 65535) return null;
  return { host: m[1] ?? (m[2] || '0.0.0.0'), port };
}

/** True for a wildcard host ("0.0.0.0", "::", or ":PORT"'s empty host): every interface of the node. */
export function bindsAllInterfaces(host: string): boolean {
  return host === '0.0.0.0' || host === '::' || host === '' || host === '[::]';
}

/**
 * The two questions a supervisor asks, apart. Live: the loop completes passes (a wedged agent
 * is restarted). Ready: and its view is whole (the runtime answers), so what it serves can be
 * trusted; a container runtime that is down makes evictd not ready, never restarts it (a
 * restarted evictd would find the runtime just as down, and knows less).
 */
export interface Probes {
  live: () => Health;
  ready: () => Health;
}

export async function startMetricsServer(listen: { host: string; port: number }, registry: Registry, probes: Probes): Promise<MetricsServer> {
  const server = boundedServer((req, res) => {
    const url = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD' }).end();
      return;
    }
    // /healthz is /readyz, as it always answered; /livez is the liveness probe.
    const probe = url === '/livez' ? probes.live : url === '/readyz' || url === '/healthz' ? probes.ready : null;
    if (probe) {
      const h = probe();
      res.writeHead(h.ok ? 200 : 503, { 'content-type': 'text/plain' }).end(h.ok ? 'ok\n' : `unhealthy: ${h.reason}\n`);
      return;
    }
    if (url === '/metrics') {
      registry.metrics().then(
        (text) => res.writeHead(200, { 'content-type': registry.contentType }).end(text),
        (err: unknown) => res.writeHead(500, { 'content-type': 'text/plain' }).end(String(err)),
      );
      return;
    }
    res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: try /metrics, /livez or /readyz\n');
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(listen.port, listen.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const a = server.address() as AddressInfo;
  return {
    address: a.family === 'IPv6' ? `[${a.address}]:${a.port}` : `${a.address}:${a.port}`,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
