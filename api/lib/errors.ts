/** The one error type of the API. Its body is `{error: {code, message, fields?, ...extra}}`. */
export class AppError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
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

export const errors = {
  unauthenticated: (message = 'Sign in, or send a personal access token as "Authorization: Bearer vcp_..."') =>
    new AppError(401, 'unauthenticated', message),
  forbidden: (message = 'Your role in this team does not allow this') => new AppError(403, 'forbidden', message),
  tokenNotAllowed: () =>
    new AppError(403, 'token_not_allowed', 'A personal access token cannot be used here; sign in instead'),
  reauthenticationRequired: () =>
    new AppError(
      403,
      'reauthentication_required',
      'This change needs a recent sign-in: confirm your password with POST /session/reauthenticate, then repeat the request',
    ),
  notFound: (what = 'resource') => new AppError(404, 'not_found', `No such ${what}`),
  invalid: (fields: Record<string, string>, message = 'The request has invalid fields') =>
    new AppError(422, 'invalid', message, fields),
  conflict: (code: string, message: string, extra?: Record<string, unknown>) => new AppError(409, code, message, undefined, extra),
  rateLimited: (retryAfterSeconds: number, message = 'Too many requests; wait and repeat the request unchanged') =>
    new AppError(429, 'rate_limited', message, undefined, undefined, { 'Retry-After': String(Math.max(1, Math.ceil(retryAfterSeconds))) }),
};
