/**
 * A small Kubernetes API client over Node's own http/https: JSON requests with a deadline, and
 * watch streams (one JSON object per line). Everything runs on the main event loop; nothing
 * here retries: callers own their retry policy, because "retry" means different things for a
 * list, a watch and a write that must not happen twice.
 */
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { KubeConfig } from './config';

/**
 * A failed API call. `status` is the HTTP status, or 0 when no response arrived (connection
 * refused or reset, timeout): then `reason` is 'NetworkError' or 'Timeout', and a write may or
 * may not have been applied.
 */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  constructor(
    readonly status: number,
    readonly reason: string,
    message: string,
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
  }
  /** Worth trying again later: no answer, throttled, or a server-side failure. */
  get transient(): boolean {
    return this.status === 0 || this.status === 429 || this.status >= 500;
  }
}

export interface RequestOptions {
  body?: unknown;
  contentType?: string;
  timeoutMs?: number;
  signal?: AbortSignal;
}

export interface WatchEvent<T = unknown> {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  object: T;
}

export interface WatchOptions {
  signal?: AbortSignal;
  /** abort when no byte arrives for this long (a silently dead connection); bookmarks keep it fed */
  idleTimeoutMs?: number;
  /** deadline for the response headers */
  connectTimeoutMs?: number;
  /** called once the server has answered 200: the watch is established */
  onOpen?: () => void;
}

export interface ClientOptions {
  timeoutMs?: number;
  userAgent?: string;
}

const TOKEN_REREAD_MS = 60_000;

export class KubeClient {
  readonly server: URL;
  private readonly agent: http.Agent;
  private readonly timeoutMs: number;
  private readonly userAgent: string;
  private tokenCache?: { value: string; readAt: number };

  constructor(
    private readonly config: KubeConfig,
    opts: ClientOptions = {},
  ) {
    this.server = new URL(config.server);
    this.timeoutMs = opts.timeoutMs ?? 10_000;
    this.userAgent = opts.userAgent ?? 'evictd';
    const tls = this.server.protocol === 'https:';
    this.agent = tls
      ? new https.Agent({
          keepAlive: true,
          ca: config.ca,
          cert: config.cert,
          key: config.key,
          rejectUnauthorized: !config.insecureSkipTLSVerify,
        })
      : new http.Agent({ keepAlive: true });
  }

  /** One JSON request. Resolves to the parsed body for 2xx, rejects with ApiError otherwise. */
  async request<T = unknown>(method: string, path: string, opts: RequestOptions = {}): Promise<T> {
    const res = await this.open(method, path, opts.body, opts.contentType, opts.timeoutMs ?? this.timeoutMs, opts.signal, true);
    const text = await readAll(res.message, res.deadline);
    if ((res.message.statusCode ?? 0) >= 300) throw this.failed(res.message, text);
    try {
      return (text.length ? JSON.parse(text) : {}) as T;
    } catch {
      throw new ApiError(res.message.statusCode ?? 0, 'BadResponse', `${method} ${path}: response is not JSON`);
    }
  }

  /**
   * Streams a watch: calls onEvent for each line. Resolves when the server ends the stream
   * (its timeoutSeconds) or the signal aborts; rejects with ApiError when the response is not
   * 200, the connection breaks, or nothing arrives within idleTimeoutMs.
   */
  async watch<T = unknown>(path: string, onEvent: (ev: WatchEvent<T>) => void, opts: WatchOptions = {}): Promise<void> {
    const res = await this.open('GET', path, undefined, undefined, opts.connectTimeoutMs ?? this.timeoutMs, opts.signal, false);
    const msg = res.message;
    if ((msg.statusCode ?? 0) !== 200) throw this.failed(msg, await readAll(msg, res.deadline));
    opts.onOpen?.();
    return new Promise<void>((resolve, reject) => {
      let buffered = '';
      let settled = false;
      let idle: NodeJS.Timeout | undefined;
      const finish = (err?: Error) => {
        if (settled) return;
        settled = true;
        clearTimeout(idle);
        opts.signal?.removeEventListener('abort', onAbort);
        if (err) {
          msg.destroy();
          reject(err);
        } else resolve();
      };
      const armIdle = () => {
        if (!opts.idleTimeoutMs) return;
        clearTimeout(idle);
        idle = setTimeout(() => finish(new ApiError(0, 'Timeout', `watch ${path}: no data for ${opts.idleTimeoutMs} ms`)), opts.idleTimeoutMs);
      };
      const onAbort = () => {
        msg.destroy();
        finish();
      };
      if (opts.signal?.aborted) return onAbort();
      opts.signal?.addEventListener('abort', onAbort);
      armIdle();
      msg.setEncoding('utf8');
      msg.on('data', (chunk: string) => {
        armIdle();
        buffered += chunk;
        let nl: number;
        while (!settled && (nl = buffered.indexOf('\n')) >= 0) {
          const line = buffered.slice(0, nl).trim();
          buffered = buffered.slice(nl + 1);
          if (!line) continue;
          let ev: WatchEvent<T>;
          try {
            ev = JSON.parse(line) as WatchEvent<T>;
          } catch {
            return finish(new ApiError(0, 'BadResponse', `watch ${path}: a line is not JSON`));
          }
          try {
            onEvent(ev);
          } catch (err) {
            return finish(err as Error);
          }
        }
      });
      msg.on('end', () => {
        if (buffered.trim()) return finish(new ApiError(0, 'NetworkError', `watch ${path}: stream cut mid-event`));
        finish();
      });
      msg.on('error', (err) => finish(opts.signal?.aborted ? undefined : new ApiError(0, 'NetworkError', `watch ${path}: ${err.message}`)));
      msg.on('close', () => {
        if (opts.signal?.aborted) finish();
        else if (!msg.complete) finish(new ApiError(0, 'NetworkError', `watch ${path}: connection reset`));
      });
    });
  }

  /** Frees the keep-alive sockets (tests, shutdown). */
  close(): void {
    this.agent.destroy();
  }

  /** A 401 may mean the token file was rotated since we read it: read it again next time. */
  private failed(msg: http.IncomingMessage, text: string): ApiError {
    if (msg.statusCode === 401) this.tokenCache = undefined;
    return statusError(msg, text);
  }

  private token(): string | undefined {
    if (this.config.tokenFile) {
      const now = Date.now();
      if (!this.tokenCache || now - this.tokenCache.readAt > TOKEN_REREAD_MS) {
        try {
          this.tokenCache = { value: fs.readFileSync(this.config.tokenFile, 'utf8').trim(), readAt: now };
        } catch {
          // keep the last token we read: a rotation replaces the file atomically, a read can race it
        }
      }
      if (this.tokenCache) return this.tokenCache.value;
    }
    return this.config.token;
  }

  private open(
    method: string,
    path: string,
    body: unknown,
    contentType: string | undefined,
    timeoutMs: number,
    signal: AbortSignal | undefined,
    bodyDeadline: boolean,
  ): Promise<{ message: http.IncomingMessage; deadline: NodeJS.Timeout | undefined }> {
    const url = new URL(path, this.server);
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const headers: http.OutgoingHttpHeaders = { Accept: 'application/json', 'User-Agent': this.userAgent };
    const token = this.token();
    if (token) headers.Authorization = `Bearer ${token}`;
    if (payload) {
      headers['Content-Type'] = contentType ?? 'application/json';
      headers['Content-Length'] = payload.length;
    }
    const mod = url.protocol === 'https:' ? https : http;
    return new Promise((resolve, reject) => {
      const req = mod.request(url, { method, headers, agent: this.agent, signal });
      // One deadline for headers and (for plain requests) the whole body: a slow API server
      // must not stall a pass, and a socket timeout alone would not bound a trickling body.
      let response: http.IncomingMessage | undefined;
      const deadline = setTimeout(() => {
        const err = new ApiError(0, 'Timeout', `${method} ${url.pathname}: no answer within ${timeoutMs} ms`);
        if (response) response.destroy(err);
        else req.destroy(err);
      }, timeoutMs);
      req.on('response', (message) => {
        response = message;
        if (!bodyDeadline) clearTimeout(deadline);
        resolve({ message, deadline: bodyDeadline ? deadline : undefined });
      });
      req.on('error', (err) => {
        clearTimeout(deadline);
        if (err instanceof ApiError) reject(err);
        else if (err.name === 'AbortError') reject(new ApiError(0, 'Aborted', `${method} ${url.pathname}: aborted`));
        else reject(new ApiError(0, 'NetworkError', `${method} ${url.pathname}: ${err.message}`));
      });
      req.end(payload);
    });
  }
}

function readAll(msg: http.IncomingMessage, deadline: NodeJS.Timeout | undefined): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    msg.on('data', (c: Buffer) => chunks.push(c));
    msg.on('end', () => {
      clearTimeout(deadline);
      resolve(Buffer.concat(chunks).toString('utf8'));
    });
    msg.on('error', (err) => {
      clearTimeout(deadline);
      reject(err instanceof ApiError ? err : new ApiError(0, 'NetworkError', err.message));
    });
    // 'close' before 'end' means the connection broke mid-body (a rejection already made wins)
    msg.on('close', () => {
      clearTimeout(deadline);
      if (!msg.complete) reject(new ApiError(0, 'NetworkError', 'connection reset mid-response'));
    });
  });
}

/** Turns a non-2xx answer into an ApiError carrying the metav1.Status reason and message. */
function statusError(msg: http.IncomingMessage, text: string): ApiError {
  const code = msg.statusCode ?? 0;
  let reason = http.STATUS_CODES[code] ?? 'Unknown';
  let message = `HTTP ${code}`;
  try {
    const status = JSON.parse(text) as { reason?: string; message?: string };
    if (status.reason) reason = status.reason;
    if (status.message) message = `HTTP ${code}: ${status.message}`;
  } catch {
    // not a metav1.Status: keep the HTTP status text
  }
  const retryAfter = Number(msg.headers['retry-after']);
  return new ApiError(code, reason, message, Number.isFinite(retryAfter) ? retryAfter : undefined);
}
