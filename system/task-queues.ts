/**
 * The task queues' names (CONTRACT "Hosts"). Deterministic, importing nothing: the workflow bundle routes a
 * host's work to its queue with these, and the worker polls the same names.
 */

/** The worker's task queue unless TEMPORAL_TASK_QUEUE says otherwise. */
export const DEFAULT_TASK_QUEUE = 'vc-console';

/** A host's own task queue: `host-NAME`, or `<TEMPORAL_TASK_QUEUE>-host-NAME` when the task queue is not the default. */
export const hostTaskQueue = (taskQueue: string, hostName: string) =>
  taskQueue === DEFAULT_TASK_QUEUE ? `host-${hostName}` : `${taskQueue}-host-${hostName}`;
