/** Exit codes of the client (CONTRACT "The `service` client"). */
export const EXIT = {
  ok: 0,
  /** --wait: the task failed. */
  failed: 1,
  /** --wait: the task was cancelled. */
  cancelled: 2,
  /** Refused because another task runs on the environment (the message names it). */
  busy: 3,
  /** Any other refusal: the API's, a usage error, an unreachable console. */
  refused: 4,
} as const;

/** A refusal the client reports as one sentence (never a stack trace) and exits with. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: number = EXIT.refused,
    readonly details: string[] = [],
  ) {
    super(message);
  }
}

/** An answer of the API outside 2xx, with its error body (CONTRACT "Bodies and errors"). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly fields: Record<string, string> | undefined,
    readonly body: Record<string, unknown>,
  ) {
    super(message);
  }

  /** The running task a 409 deploy_in_progress / task_in_progress names. */
  get runningTaskId(): string | undefined {
    if (this.status !== 409 || !['deploy_in_progress', 'task_in_progress'].includes(this.code)) return undefined;
    const id = (this.body.error as { task_id?: unknown } | undefined)?.task_id;
    return typeof id === 'string' ? id : undefined;
  }
}
