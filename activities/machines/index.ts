export { createResourceActivities } from './prune';
export type { ResourceActivities } from './prune';
export { startResourceSampler } from './sampler';
export type { ResourceSampler } from './sampler';
