/**
 * The one catalogue of error codes and their statuses (CONTRACT "Bodies and errors"), and the one error
 * type of the API. Its body is `{error: {code, message, fields?, ...extra}}`.
 */
export const ERROR_CODES = {
  malformed_body: 400,
  authorization_pending: 400,
  slow_down: 400,
  expired_token: 400,
  access_denied: 400,
  unauthenticated: 401,
  forbidden: 403,
  token_not_allowed: 403,
  reauthentication_required: 403,
  email_not_confirmed: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  email_taken: 409,
  deploy_in_progress: 409,
  task_in_progress: 409,
  task_not_cancellable: 409,
  domain_taken: 409,
  domain_allowance_spent: 409,
  project_not_empty: 409,
  team_not_empty: 409,
  storage_allowance_spent: 409,
  invitation_not_open: 409,
  last_owner: 409,
  no_repository: 409,
  repository_unreachable: 409,
  ref_not_found: 409,
  no_port_available: 409,
  nothing_to_redeploy: 409,
  nothing_to_roll_back: 409,
  idempotency_key_in_use: 409,
  subscription_not_active: 409,
  snapshot_not_available: 409,
  snapshot_running: 409,
  no_database_service: 409,
  service_exists: 409,
  services_unreachable: 409,
  old_database_kept: 409,
  no_old_database: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  invalid: 422,
  rate_limited: 429,
  internal: 500,
  mail_not_sent: 503,
  unavailable: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

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

/** An error of the catalogue, its status taken from there. */
export function appError(
  code: ErrorCode,
  message: string,
  opts: { fields?: Record<string, string>; extra?: Record<string, unknown>; headers?: Record<string, string> } = {},
): AppError {
  return new AppError(ERROR_CODES[code], code, message, opts.fields, opts.extra, opts.headers);
}

export const errors = {
  unauthenticated: (message = 'Sign in, or send a personal access token as "Authorization: Bearer vcp_..."') =>
    appError('unauthenticated', message),
  forbidden: (message = 'Your role in this team does not allow this') => appError('forbidden', message),
  tokenNotAllowed: () => appError('token_not_allowed', 'A personal access token cannot be used here; sign in instead'),
  reauthenticationRequired: () =>
    appError(
      'reauthentication_required',
      'This change needs a recent sign-in: confirm your password with POST /session/reauthenticate, then repeat the request',
    ),
  notFound: (what = 'resource') => appError('not_found', `No such ${what}`),
  invalid: (fields: Record<string, string>, message = 'The request has invalid fields') =>
    appError('invalid', message, { fields }),
  conflict: (code: ErrorCode, message: string, extra?: Record<string, unknown>) => appError(code, message, { extra }),
  rateLimited: (retryAfterSeconds: number, message = 'Too many requests; wait and repeat the request unchanged') =>
    appError('rate_limited', message, {
      headers: { 'Retry-After': String(Math.max(1, Math.ceil(retryAfterSeconds))) },
    }),
};
