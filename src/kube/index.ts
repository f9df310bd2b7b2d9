/** The Kubernetes side of evictd: pod specs in, eviction status and events out, admission. */
export { ApiError, KubeClient, type WatchEvent } from './client';
export { inClusterConfig, loadKubeconfig, type KubeConfig } from './config';
export { fromV1Pod, isTerminal, type KubePod, type V1Pod } from './pod-spec';
export { PodCache, silentLogger, type Logger, type PodChange, type PodSource, type PodSourceKind } from './pod-source';
export { ApiPodSource, type ApiPodSourceOptions, type PodSourceStats } from './api-pod-source';
export { KubeletPodSource } from './kubelet-pod-source';
export { RuntimePodSource, podSpecFromSandbox, type RuntimeSandbox } from './runtime-pod-source';
export { FallbackPodSource } from './fallback-pod-source';
export { EvictionReporter, resourceOfSignal, type Eviction, type ReporterStats } from './eviction-reporter';
export { admissionHandler, startAdmissionServer, type AdmissionDecision } from './admission-server';
export { registerKubeMetrics } from './metrics';
export { createKubeParts, resolveNodeName, type KubeFlags, type KubeParts } from './setup';
