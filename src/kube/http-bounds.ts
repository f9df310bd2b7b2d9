/**
 * Bounds for evictd's HTTP endpoints (/admit, /metrics, /healthz): anything that can reach them
 * (any host-network process, a pod on the node) must not be able to hold evictd's memory or its
 * sockets. Node's defaults leave a request 300 s to arrive and no cap on connections: 300 stalled
 * uploads of 1 MB each took evictd past its DaemonSet's 256Mi limit. With these, the most an
 * endpoint can hold is `maxConnections` bodies at once, each for at most `requestTimeoutMs`.
 */
import http from 'node:http';

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

export const HTTP_BOUNDS: HttpBounds = { maxConnections: 16, headersTimeoutMs: 5_000, requestTimeoutMs: 10_000, keepAliveTimeoutMs: 5_000, maxHeaderBytes: 8 * 1024 };

/** http.createServer with the bounds (tests shorten them). */
export function boundedServer(handler: http.RequestListener, b: HttpBounds = HTTP_BOUNDS): http.Server {
  const server = http.createServer({ maxHeaderSize: b.maxHeaderBytes, requestTimeout: b.requestTimeoutMs, headersTimeout: b.headersTimeoutMs, keepAliveTimeout: b.keepAliveTimeoutMs }, handler);
  server.maxConnections = b.maxConnections;
  // A socket that sends nothing at all (not even a request line) is closed too.
  server.setTimeout(b.requestTimeoutMs, (socket) => socket.destroy());
  return server;
}
