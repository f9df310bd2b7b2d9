import path from 'node:path';
import { badValue } from '../errors';

/**
 * Parses a runtime endpoint as the kubelet's --container-runtime-endpoint takes it:
 * `unix:///run/containerd/containerd.sock`; a bare absolute path is accepted as unix://.
 * Returns the gRPC target and the socket path (for error messages).
 */
export function parseEndpoint(endpoint: string, flag = '--container-runtime-endpoint'): { target: string; socketPath: string } {
  let p: string;
  if (endpoint.startsWith('unix://')) p = endpoint.slice('unix://'.length);
  else if (endpoint.startsWith('/')) p = endpoint;
  else throw badValue(flag, endpoint, 'must be unix:///path/to/socket (the only transport the CRI uses on Linux)');
  if (!path.isAbsolute(p) || p.length < 2) throw badValue(flag, endpoint, 'socket path must be absolute');
  return { target: `unix://${p}`, socketPath: p };
}
