/**
 * Bounds for evictd's HTTP endpoints (/admit, /metrics, /healthz): anything that can reach them
 * (any host-network process, a pod on the node) must not be able to hold evictd's memory or its
 * sockets. Node's defaults leave a request 300 s to arrive and no cap on connections: 300 stalled
 * uploads of 1 MB each took evictd past its DaemonSet's 256Mi limit. With these, the most an
 * endpoint can hold is `maxConnections` bodies at once, each for at most `requestTimeoutMs`.
 */
import http from 'node:http';
import https from 'node:https';

export interface HttpBounds {
  /** concurrent connections; one more is closed at once */
  maxConnections: number;
  /** a request's headers must arrive within this, the whole request within requestTimeoutMs */
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  /** an idle keep-alive connection is closed after this */
  keepAliveTimeoutMs: number;
  /** headers larger than this are refused (431) before any handler runs */
  maxHeaderBytes: number;
}

export const HTTP_BOUNDS: HttpBounds = {
  maxConnections: 16,
  headersTimeoutMs: 5_000,
  requestTimeoutMs: 10_000,
  keepAliveTimeoutMs: 5_000,
  maxHeaderBytes: 8 * 1024,
};

/** PEM text of a server's certificate and key, and of the CA its clients' certificates must chain to. */
export interface ServerTls {
  cert: string;
  key: string;
  clientCa: string;
}

/**
 * http.createServer with the bounds (tests shorten them); with `tls`, HTTPS that takes only
 * clients presenting a certificate signed by `clientCa` (the handshake fails otherwise, before
 * any request is read).
 */
export function boundedServer(handler: http.RequestListener, b: HttpBounds = HTTP_BOUNDS, tls?: ServerTls): http.Server {
  const options = {
    maxHeaderSize: b.maxHeaderBytes,
    requestTimeout: b.requestTimeoutMs,
    headersTimeout: b.headersTimeoutMs,
    keepAliveTimeout: b.keepAliveTimeoutMs,
  };
  const server: http.Server = tls
    ? https.createServer({ ...options, cert: tls.cert, key: tls.key, ca: tls.clientCa, requestCert: true, rejectUnauthorized: true }, handler)
    : http.createServer(options, handler);
  server.maxConnections = b.maxConnections;
  // A socket that sends nothing at all (not even a request line) is closed too.
  server.setTimeout(b.requestTimeoutMs, (socket) => socket.destroy());
  return server;
}
