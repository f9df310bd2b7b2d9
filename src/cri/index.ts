export { CriClient, podStatsFromContainers } from './client';
export type { CallOptions, CriClientOptions } from './client';
export { CriError } from './errors';
export { parseEndpoint } from './endpoint';
export { EvictError, evictPod } from './evict';
export type { EvictOptions, EvictResult, EvictStep, EvictTimings } from './evict';
export { reclaimContainers, reclaimImages } from './reclaim';
export type { FsSample, ReclaimContainersResult, ReclaimImagesOptions, ReclaimImagesResult, ReclaimOptions } from './reclaim';
export type * from './types';
