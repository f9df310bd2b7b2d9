/**
 * deploy/daemonset.yaml's container turned into what the kubelet would ask the runtime for, so
 * the lab can run the deployment as deployed (test/agent/deployment.test.ts): the pod's host
 * namespaces, the container's mounts (read-only and propagation as written), its security
 * context (capabilities, read-only root, no privilege escalation, user and group, seccomp), its
 * memory limit, args and env, and its image (named as written: the caller imports the one
 * scripts/image.sh builds under that name). The command is the image's entrypoint, as the
 * kubelet leaves it when the container names none. What a node has and the lab does not is
 * supplied by the caller: a host directory per volume, the values of fieldRefs.
 *
 * Anything in the container spec this does not translate is refused by name: a field added to
 * the DaemonSet later must be carried here (and so tested) or the test fails, instead of the
 * lab quietly running something other than what is shipped.
 */
import type { ContainerRunSpec, SandboxSpec } from './sandbox-config';
import type { Mount } from '../cri/types';
import { Quantity } from '../policy/quantity';

/** The parts of a DaemonSet manifest read here (YAML as parsed). */
export interface DaemonSetDoc {
  spec: { template: { spec: Record<string, unknown> & { containers: Record<string, unknown>[]; volumes?: { name: string }[] } } };
}

export interface DaemonSetLabMapping {
  /** the host directory (or file) standing for each volume of the pod, by volume name */
  volumes: Record<string, string>;
  /** values for env entries the kubelet fills from the pod (fieldRef), by variable name */
  fieldRefs: Record<string, string>;
  /** replaces args by exact match (what differs in the lab, each said by the caller) */
  replaceArgs?: Record<string, string>;
  /** appended after the DaemonSet's args (flags win over the config file, as in the kubelet) */
  extraArgs?: string[];
}

// The probes are the kubelet's to run (the lab has none); the ports of a host-network pod are the node's own.
const CONTAINER_FIELDS = new Set([
  'name',
  'image',
  'args',
  'env',
  'ports',
  'resources',
  'securityContext',
  'startupProbe',
  'livenessProbe',
  'readinessProbe',
  'volumeMounts',
]);
const SECURITY_FIELDS = new Set([
  'runAsUser',
  'runAsGroup',
  'privileged',
  'allowPrivilegeEscalation',
  'readOnlyRootFilesystem',
  'capabilities',
  'seccompProfile',
]);
const MOUNT_FIELDS = new Set(['name', 'mountPath', 'readOnly', 'mountPropagation']);

/**
 * The kubelet's expansion of args: `$(NAME)` becomes the container's env value NAME (left as
 * written when there is none), `$$` a literal `$` (kubernetes' third_party/forked/golang/expansion).
 */
export function expandVars(arg: string, env: Record<string, string>): string {
  return arg.replace(/\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (whole, name: string | undefined) => (name === undefined ? '$' : (env[name] ?? whole)));
}

function refuseUnknown(what: string, obj: Record<string, unknown>, known: Set<string>): void {
  for (const k of Object.keys(obj)) if (!known.has(k)) throw new Error(`${what}.${k}: not translated for the lab`);
}

/** The pod's and its one container's CRI specs, named `name` in `namespace` with `uid`. */
export function daemonSetToCri(
  ds: DaemonSetDoc,
  m: DaemonSetLabMapping,
  pod: { name: string; namespace: string; uid: string },
): { pod: SandboxSpec; container: ContainerRunSpec } {
  const spec = ds.spec.template.spec;
  if (spec.containers.length !== 1) throw new Error(`containers: ${spec.containers.length}: the lab runs a one-container DaemonSet`);
  if (spec.hostNetwork !== true) throw new Error('hostNetwork: the lab pods share the node network only');
  const c = spec.containers[0]!;
  refuseUnknown('containers[0]', c, CONTAINER_FIELDS);
  const volumes = new Map((spec.volumes ?? []).map((v) => [v.name, v]));

  const mounts: Mount[] = [];
  for (const vm of (c.volumeMounts as Record<string, unknown>[] | undefined) ?? []) {
    refuseUnknown(`volumeMounts[${String(vm.name)}]`, vm, MOUNT_FIELDS);
    const name = String(vm.name);
    if (!volumes.has(name)) throw new Error(`volumeMounts[${name}]: no such volume`);
    const host = m.volumes[name];
    if (host === undefined) throw new Error(`volumes[${name}]: no host directory given for the lab`);
    const propagation =
      vm.mountPropagation === undefined || vm.mountPropagation === 'None'
        ? 'PROPAGATION_PRIVATE'
        : vm.mountPropagation === 'HostToContainer'
          ? 'PROPAGATION_HOST_TO_CONTAINER'
          : 'PROPAGATION_BIDIRECTIONAL';
    mounts.push({ containerPath: String(vm.mountPath), hostPath: host, readonly: vm.readOnly === true, propagation });
  }

  const sc = (c.securityContext ?? {}) as Record<string, unknown>;
  refuseUnknown('securityContext', sc, SECURITY_FIELDS);
  const caps = (sc.capabilities ?? {}) as { add?: string[]; drop?: string[] };
  // Unset, the kubelet asks for no profile (Unconfined) unless its SeccompDefault is on.
  const seccomp = (sc.seccompProfile ?? { type: 'Unconfined' }) as { type: string };
  if (seccomp.type !== 'RuntimeDefault' && seccomp.type !== 'Unconfined')
    throw new Error(`securityContext.seccompProfile.type: ${seccomp.type}: not translated for the lab`);

  const env: Record<string, string> = {};
  for (const e of (c.env as { name: string; value?: string; valueFrom?: unknown }[] | undefined) ?? []) {
    if (e.value !== undefined) env[e.name] = e.value;
    else if (m.fieldRefs[e.name] !== undefined) env[e.name] = m.fieldRefs[e.name]!;
    else throw new Error(`env[${e.name}]: no value given for the lab`);
  }
  const limit = (c.resources as { limits?: { memory?: string } } | undefined)?.limits?.memory;
  const args = ((c.args as string[] | undefined) ?? []).map((a) => expandVars(m.replaceArgs?.[a] ?? a, env));

  return {
    pod: { ...pod, hostPid: spec.hostPID === true },
    container: {
      name: String(c.name),
      image: String(c.image),
      args: [...args, ...(m.extraArgs ?? [])],
      env,
      ...(limit !== undefined ? { memoryLimitBytes: Quantity.parse(limit).value() } : {}),
      mounts,
      securityContext: {
        ...(caps.add || caps.drop ? { capabilities: { addCapabilities: caps.add ?? [], dropCapabilities: caps.drop ?? [] } } : {}),
        privileged: sc.privileged === true,
        ...(typeof sc.runAsUser === 'number' ? { runAsUser: { value: sc.runAsUser } } : {}),
        ...(typeof sc.runAsGroup === 'number' ? { runAsGroup: { value: sc.runAsGroup } } : {}),
        readonlyRootfs: sc.readOnlyRootFilesystem === true,
        // The kubelet sets no_new_privs unless privilege escalation is allowed.
        noNewPrivs: sc.allowPrivilegeEscalation === false,
        seccomp: { profileType: seccomp.type as 'RuntimeDefault' | 'Unconfined' },
      },
    },
  };
}
