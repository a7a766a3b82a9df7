/**
 * The one catalogue of error codes (CONTRACT "Bodies and errors"), and the one error type of the API. Its
 * body is `{error: {code, message, fields?, ...extra}}`. Every code has its status and a default message:
 * how the refusal reads wherever the caller has nothing more particular to say, so that the same refusal
 * reads the same everywhere.
 */
const ERROR_CODES = {
  malformed_body: { status: 400, message: 'The request body is not valid JSON' },
  authorization_pending: {
    status: 400,
    message: 'Waiting for the sign-in to be approved in the browser; poll again after the interval',
  },
  slow_down: { status: 400, message: 'Polling too fast; wait the interval (now 5 seconds longer) between polls' },
  expired_token: { status: 400, message: 'The device code has expired or was already used; start the sign-in again' },
  access_denied: { status: 400, message: 'The sign-in was denied in the browser' },
  unauthenticated: {
    status: 401,
    message: 'Sign in, or send a personal access token as "Authorization: Bearer vcp_..."',
  },
  forbidden: { status: 403, message: 'Your role in this team does not allow this' },
  token_not_allowed: { status: 403, message: 'A personal access token cannot be used here; sign in instead' },
  reauthentication_required: {
    status: 403,
    message: 'This change needs a recent sign-in: confirm your password, then repeat the change',
  },
  email_not_confirmed: {
    status: 403,
    message: 'Confirm your e-mail address first: enter the code we sent, or ask for a new one',
  },
  not_found: { status: 404, message: 'No such resource' },
  method_not_allowed: { status: 405, message: 'This method is not allowed here' },
  conflict: { status: 409, message: 'That already exists' },
  email_taken: { status: 409, message: 'An account with this e-mail address already exists; sign in instead' },
  deploy_in_progress: { status: 409, message: 'Another deploy runs on this environment; wait for it to finish' },
  task_in_progress: { status: 409, message: 'Another change runs on this environment; wait for it to finish' },
  task_not_cancellable: { status: 409, message: 'Only a pending task (nothing has started it) can be cancelled' },
  domain_taken: { status: 409, message: 'That hostname is already verified on an environment' },
  domain_allowance_spent: {
    status: 409,
    message: "The project has used its allowance of domains; remove one, or raise the project's allowance",
  },
  project_not_empty: { status: 409, message: 'The project still has environments; delete them first' },
  team_not_empty: { status: 409, message: 'The team is not empty; it still holds other resources. Remove them first.' },
  storage_allowance_spent: { status: 409, message: "The project's storage allowance is spent" },
  invitation_not_open: { status: 409, message: 'Only an open invitation can be used' },
  last_owner: { status: 409, message: 'A team keeps at least one owner: make someone else owner first' },
  no_repository: {
    status: 409,
    message: 'The project has no repository connected: connect one to the project first',
  },
  repository_unreachable: { status: 409, message: 'The repository cannot be read right now' },
  ref_not_found: { status: 409, message: 'That branch, tag or commit is not in the repository' },
  no_port_available: { status: 409, message: 'No port could be given to the environment; try again' },
  local_destination_elsewhere: {
    status: 409,
    message:
      "A local backup destination is on the control plane's machine, and this environment runs on another: use an s3 destination",
  },
  no_capacity: { status: 409, message: 'No host has room for this now; try a smaller plan, or try again later' },
  nothing_to_redeploy: { status: 409, message: 'Nothing is live on this environment yet: deploy it first' },
  nothing_to_roll_back: { status: 409, message: 'There is no earlier release on this environment to roll back to' },
  idempotency_key_in_use: {
    status: 409,
    message: 'A request with this Idempotency-Key is still being answered; repeat it in a moment',
  },
  subscription_not_active: { status: 409, message: 'This subscription is already ended or cancelled' },
  snapshot_not_available: { status: 409, message: 'The snapshot is no longer at its destination' },
  snapshot_running: { status: 409, message: 'The snapshot is still being taken; wait for its task to end' },
  no_database_service: { status: 409, message: 'The environment has no database service' },
  pitr_unavailable: { status: 409, message: 'Point-in-time recovery is not available for this database' },
  service_exists: { status: 409, message: 'The environment has a service of that kind already' },
  services_unreachable: { status: 409, message: "The environments' sandboxes cannot reach the services server" },
  old_database_kept: {
    status: 409,
    message: 'The database the last reshape left behind is still kept: discard it first',
  },
  no_old_database: { status: 409, message: 'The environment keeps no old database: nothing to discard' },
  payload_too_large: { status: 413, message: 'The request body is too large' },
  unsupported_media_type: { status: 415, message: 'Send the body as application/json' },
  invalid: { status: 422, message: 'The request has invalid fields' },
  rate_limited: { status: 429, message: 'Too many requests; wait and repeat the request unchanged' },
  internal: { status: 500, message: 'Something went wrong on our side' },
  mail_not_sent: { status: 503, message: 'The e-mail could not be sent, so nothing was changed; try again shortly' },
  unavailable: { status: 503, message: 'The service is unavailable right now; try again shortly' },
  edge_unavailable: {
    status: 503,
    message:
      'The change is saved, but an edge did not apply it within 10 seconds: it will be applied when the edge is back',
  },
} as const satisfies Record<string, { status: number; message: string }>;

type ErrorCode = keyof typeof ERROR_CODES;

export class AppError extends Error {
  constructor(
    readonly status: number,
    readonly code: ErrorCode,
    message: string,
    readonly fields?: Record<string, string>,
    readonly extra?: Record<string, unknown>,
    readonly headers?: Record<string, string>,
  ) {
    super(message);
    this.name = 'AppError';
  }

  toBody() {
    return {
      error: {
        code: this.code,
        message: this.message,
        ...(this.fields ? { fields: this.fields } : {}),
        ...(this.extra ?? {}),
      },
    };
  }
}

/** An error of the catalogue, its status (and, unless given, its message) taken from there. */
export function appError(
  code: ErrorCode,
  message: string = ERROR_CODES[code].message,
  opts: { fields?: Record<string, string>; extra?: Record<string, unknown>; headers?: Record<string, string> } = {},
): AppError {
  return new AppError(ERROR_CODES[code].status, code, message, opts.fields, opts.extra, opts.headers);
}

export const errors = {
  unauthenticated: (message?: string) => appError('unauthenticated', message),
  forbidden: (message?: string) => appError('forbidden', message),
  tokenNotAllowed: () => appError('token_not_allowed'),
  reauthenticationRequired: (message?: string) => appError('reauthentication_required', message),
  notFound: (what = 'resource') => appError('not_found', `No such ${what}`),
  invalid: (fields: Record<string, string>, message?: string) => appError('invalid', message, { fields }),
  /** A refusal of the catalogue: its default message unless one is given, and what the body adds (`extra`). */
  conflict: (code: ErrorCode, message?: string, extra?: Record<string, unknown>) => appError(code, message, { extra }),
  /** The catalogue's refusal as it reads by default, with what the body adds (`extra`). */
  refusal: (code: ErrorCode, extra?: Record<string, unknown>) => appError(code, undefined, { extra }),
  rateLimited: (retryAfterSeconds: number, message?: string) =>
    appError('rate_limited', message, {
      headers: { 'Retry-After': String(Math.max(1, Math.ceil(retryAfterSeconds))) },
    }),
};
