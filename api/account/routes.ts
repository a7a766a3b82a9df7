import { defineRoute, type RouteDef } from '../lib/define-route';
import { appError } from '../../core/errors';
import * as s from './schemas';
import { presentMe, presentSshKey, presentUser } from './presenter';
import { confirmEmail, resendConfirmation, signUp } from './signup-service';
import {
  clearSessionCookie,
  endOtherSessions,
  endSession,
  reauthenticate,
  sessionActor,
  setSessionCookie,
  signIn,
} from './sessions-service';
import {
  decideDeviceAuthorization,
  findPendingByUserCode,
  pollDeviceToken,
  startDeviceAuthorization,
} from './device-flow-service';
import { displayCode, sendVerifyPage } from './verify-page';
import { addSshKey, listSshKeys, removeSshKey } from './ssh-keys-service';
import { errorResponse as err } from '../lib/responses';

const tags = ['account'];
const INVALID = err('Invalid fields; `error.fields` names each one');

const signupRoutes = [
  defineRoute({
    method: 'post',
    path: '/signup',
    operationId: 'createAccount',
    summary: 'Sign up; e-mails a confirmation code (the line "Confirmation code: <code>")',
    description:
      'Passwords are 10 to 200 characters. The account can sign in once its address is confirmed. A sign-up for an ' +
      'address whose account is not confirmed yet replaces that sign-up (its codes stop working) and mails a new ' +
      'code, at most five codes an hour per address; a code confirms the password and name of the sign-up it was sent for. ' +
      'The same sign-up (name and password) sent again within 30 s of its code is answered again, with no second code.',
    tags,
    auth: 'none',
    body: s.signupBody,
    responses: {
      201: { description: 'The new account', schema: s.userSchema },
      409: err('email_taken: the e-mail address has a confirmed account (fields.email)'),
      422: INVALID,
      429: err('rate_limited: the address was sent five codes in the last hour (Retry-After)'),
    },
    async handler(ctx) {
      ctx.status = 201;
      ctx.body = presentUser(await signUp(ctx.deps, ctx.input.body));
    },
  }),
  defineRoute({
    method: 'post',
    path: '/signup/confirm',
    operationId: 'confirmAccountEmail',
    summary: 'Confirm the e-mail address with the code it received',
    description:
      'Codes work once, for 24 hours; a newer code replaces older ones. Dashes and case do not matter. A wrong code counts as a failed credential for the address. ' +
      'The same confirmation sent again within 30 s of the code’s use is answered as the first was.',
    tags,
    auth: 'none',
    body: s.confirmBody,
    responses: {
      200: { description: 'The account, address confirmed', schema: s.userSchema },
      422: err('Wrong, expired or used code (fields.code)'),
      429: err('Too many failed credentials from this address'),
    },
    async handler(ctx) {
      ctx.body = presentUser(await confirmEmail(ctx.deps, ctx.ip, ctx.input.body));
    },
  }),
  defineRoute({
    method: 'post',
    path: '/signup/resend',
    operationId: 'resendAccountConfirmation',
    summary: 'Send a new confirmation code (answers 202 whether or not the account exists)',
    description:
      'A new code is sent when an unconfirmed account has this address, at most five codes an hour. The sign-up’s earlier codes keep working until one of its codes confirms it.',
    tags,
    auth: 'none',
    body: s.resendBody,
    responses: { 202: { description: 'Accepted', schema: s.acceptedSchema }, 422: INVALID },
    handler(ctx) {
      const { deps } = ctx;
      // Not awaited: neither the answer nor its timing says whether the account exists.
      resendConfirmation(deps, ctx.input.body).catch((e: Error) =>
        deps.logger.warn({ err: e.message }, 'confirmation resend failed'),
      );
      ctx.status = 202;
      ctx.body = { message: 'If an unconfirmed account has this address, a new confirmation code is on its way' };
    },
  }),
];

const sessionRoutes = [
  defineRoute({
    method: 'post',
    path: '/session',
    operationId: 'createSession',
    summary: 'Sign in: sets the HttpOnly session cookie (a new session at every sign-in)',
    description:
      'Writes with the cookie also send X-CSRF-Token (GET /session/token). Wrong credentials count toward the per-address block.',
    tags,
    auth: 'none',
    body: s.signInBody,
    responses: {
      201: { description: 'Signed in', schema: s.signedInSchema },
      401: err('Wrong e-mail address or password'),
      403: err('email_not_confirmed: the address is not confirmed yet'),
      422: INVALID,
      429: err('Too many failed credentials from this address'),
    },
    async handler(ctx) {
      const { user, secret, session } = await signIn(ctx.deps, ctx.ip, ctx.state.actor, ctx.input.body);
      setSessionCookie(ctx.deps, ctx, secret, session.expires_at);
      ctx.set('Cache-Control', 'no-store');
      ctx.status = 201;
      ctx.body = { user: presentUser(user) };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/session/token',
    operationId: 'getSessionCsrfToken',
    description:
      'A browser session sends this value as `X-CSRF-Token` on every write (POST, PATCH, DELETE). The command-line sign-in (`vcs_` bearer) and personal access tokens need no such header.',
    summary: "The browser session's CSRF token, for the X-CSRF-Token header on writes",
    tags,
    auth: 'session',
    responses: {
      200: { description: 'The token', schema: s.csrfTokenSchema },
      403: err('Not a browser session (the command line needs no CSRF token)'),
    },
    handler(ctx) {
      const actor = sessionActor(ctx.actor);
      if (actor.via !== 'session')
        throw appError('forbidden', 'Only a browser session has a CSRF token; a vcs_ bearer needs none');
      ctx.set('Cache-Control', 'no-store');
      ctx.body = { token: actor.session.csrf_token };
    },
  }),
  defineRoute({
    method: 'delete',
    path: '/session',
    operationId: 'deleteSession',
    description:
      "Ends the caller's own session on the server: the browser cookie or the command line's `vcs_` bearer stops working at once. Other sessions of the same account are untouched.",
    summary: 'Sign out: ends this session (browser cookie or vcs_ bearer)',
    tags,
    auth: 'session',
    responses: { 204: { description: 'Signed out' }, 401: err('Not signed in') },
    async handler(ctx) {
      const actor = sessionActor(ctx.actor);
      await endSession(ctx.deps, actor.session.id);
      if (actor.via === 'session') clearSessionCookie(ctx.deps, ctx);
      ctx.status = 204;
    },
  }),
  defineRoute({
    method: 'post',
    path: '/session/reauthenticate',
    operationId: 'reauthenticateSession',
    description:
      'Some changes (revealing a backup key, restoring over a protected environment) need a recent sign-in and answer 403 `reauthentication_required` otherwise. Confirming the password here renews the sign-in time of the current session; a wrong password is 422 on `password`, and repeated failures from one address are refused with 429.',
    summary: 'Confirm the password again: renews the sign-in time for changes that need a recent sign-in',
    tags,
    auth: 'session',
    body: s.reauthenticateBody,
    responses: {
      200: { description: 'Sign-in time renewed', schema: s.reauthenticatedSchema },
      422: err('Wrong password (fields.password)'),
      429: err('Too many failed credentials from this address'),
    },
    async handler(ctx) {
      const at = await reauthenticate(ctx.deps, ctx.ip, sessionActor(ctx.actor), ctx.input.body);
      ctx.body = { authenticated_at: at.toISOString() };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/users/{id}/sessions/end-others',
    operationId: 'endOtherSessions',
    summary: 'End every browser session of your account but this one (command-line sessions stay)',
    description:
      'Only for your own user id. Needs a sign-in within the last 60 minutes (else 403 reauthentication_required).',
    tags,
    auth: 'session',
    recentSignInMinutes: 60,
    params: s.idParams,
    responses: {
      200: { description: 'Other sessions ended', schema: s.endedSessionsSchema },
      403: err('reauthentication_required: sign-in older than 60 minutes'),
      404: err('Not your user id'),
    },
    async handler(ctx) {
      ctx.body = { ended: await endOtherSessions(ctx.deps, sessionActor(ctx.actor), ctx.input.params.id) };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/me',
    operationId: 'getMe',
    description:
      "Reachable with a personal access token. Says who is calling and how: a browser session, the command-line sign-in or a token (then with the token's record: purpose, team and expiry, never the token string).",
    summary: 'The caller: account, how it came in (session, cli, token) and, for a token, its record',
    tags,
    auth: 'token',
    responses: { 200: { description: 'The caller', schema: s.meSchema }, 401: err('Not signed in') },
    handler(ctx) {
      ctx.body = presentMe(ctx.actor);
    },
  }),
];

const deviceRoutes = [
  defineRoute({
    method: 'post',
    path: '/cli/sessions',
    operationId: 'createCliDeviceAuthorization',
    description:
      'Starts the OAuth device flow (RFC 8628) that `service login` uses: the answer carries a `device_code` to poll `POST /cli/sessions/token` with, and a `user_code` and `verification_uri` for a signed-in browser to approve. Throttled per client address (`DEVICE_CODES_PER_HOUR`).',
    summary:
      'Command-line sign-in, step 1 (RFC 8628): a device code to poll with and a user code to approve in the browser',
    tags,
    auth: 'none',
    responses: {
      200: { description: 'Device authorization', schema: s.deviceAuthorizationSchema },
      429: err('rate_limited: more than DEVICE_CODES_PER_HOUR sign-ins started from this address (Retry-After)'),
    },
    async handler(ctx) {
      await ctx.deps.guards.consumeCreation('device-codes', ctx.ip);
      ctx.set('Cache-Control', 'no-store');
      ctx.body = await startDeviceAuthorization(ctx.deps);
    },
  }),
  defineRoute({
    method: 'get',
    path: '/cli/verify',
    operationId: 'getCliVerificationPage',
    description:
      'The `verification_uri` of the device flow: a page where a person signed in in the browser enters or confirms the user code and approves or denies the command-line sign-in.',
    summary: 'The page where a signed-in browser approves or denies a command-line sign-in',
    tags,
    auth: 'none',
    query: s.verifyQuery,
    responses: { 200: { description: 'HTML page', contentType: 'text/html' } },
    async handler(ctx) {
      const actor = ctx.state.actor as typeof ctx.actor | undefined;
      const userCode = displayCode(ctx.input.query.user_code);
      if (actor?.kind !== 'session' || actor.via !== 'session')
        return sendVerifyPage(ctx, { kind: 'signed-out', userCode });
      const pending = userCode ? await findPendingByUserCode(ctx.deps, userCode) : undefined;
      if (!pending)
        return sendVerifyPage(ctx, { kind: 'enter-code', user: actor.user, userCode, unknown: Boolean(userCode) });
      sendVerifyPage(ctx, { kind: 'confirm', user: actor.user, userCode: userCode! });
    },
  }),
  defineRoute({
    method: 'post',
    path: '/cli/sessions/approve',
    operationId: 'approveCliDeviceAuthorization',
    description:
      'Approves the waiting command-line sign-in with this user code for the signed-in account; the next poll of `POST /cli/sessions/token` then answers the `vcs_` bearer.',
    summary: 'Approve a command-line sign-in by its user code (case and dash do not matter)',
    tags,
    auth: 'session',
    body: s.userCodeBody,
    responses: {
      200: { description: 'Approved', schema: s.deviceDecisionSchema },
      422: err('No sign-in waits for this code (fields.user_code)'),
    },
    async handler(ctx) {
      ctx.body = await decideDeviceAuthorization(ctx.deps, ctx.actor, ctx.input.body, 'approved');
    },
  }),
  defineRoute({
    method: 'post',
    path: '/cli/sessions/deny',
    operationId: 'denyCliDeviceAuthorization',
    description:
      'Refuses the waiting command-line sign-in with this user code; its polls then end without a credential.',
    summary: 'Deny a command-line sign-in by its user code',
    tags,
    auth: 'session',
    body: s.userCodeBody,
    responses: {
      200: { description: 'Denied', schema: s.deviceDecisionSchema },
      422: err('No sign-in waits for this code (fields.user_code)'),
    },
    async handler(ctx) {
      ctx.body = await decideDeviceAuthorization(ctx.deps, ctx.actor, ctx.input.body, 'denied');
    },
  }),
  defineRoute({
    method: 'post',
    path: '/cli/sessions/token',
    operationId: 'pollCliDeviceToken',
    summary:
      'Command-line sign-in, step 2: poll with the device code; 201 with the vcs_ bearer once approved (exactly once)',
    description: 'Poll no faster than `interval` seconds; each slow_down adds 5 seconds to it.',
    tags,
    auth: 'none',
    body: s.deviceTokenBody,
    responses: {
      201: { description: 'Signed in: the vcs_ bearer', schema: s.deviceTokenSchema },
      400: {
        description: 'authorization_pending, slow_down, expired_token or access_denied',
        schema: s.deviceErrorSchema,
      },
      422: INVALID,
    },
    async handler(ctx) {
      const result = await pollDeviceToken(ctx.deps, ctx.input.body);
      ctx.set('Cache-Control', 'no-store');
      ctx.status = 201;
      ctx.body = { ...result, user: presentUser(result.user) };
    },
  }),
];

const sshKeyRoutes = [
  defineRoute({
    method: 'get',
    path: '/me/ssh-keys',
    operationId: 'listSshKeys',
    description:
      "The signed-in account's SSH public keys, oldest first, each with its SHA256 fingerprint. Signed-in only: a personal access token gets 403 `token_not_allowed`.",
    summary: 'Your SSH public keys',
    tags,
    auth: 'session',
    responses: { 200: { description: 'Keys, oldest first', schema: s.sshKeyListSchema } },
    async handler(ctx) {
      ctx.body = { data: (await listSshKeys(ctx.deps, ctx.actor)).map(presentSshKey) };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/me/ssh-keys',
    operationId: 'createSshKey',
    description:
      'Adds a public key to the signed-in account and answers it with its SHA256 fingerprint. A key of another type or a short RSA key is 422 on `public_key`; a key already added is 409.',
    summary: 'Add an SSH public key (ssh-ed25519, ssh-rsa of 2048 bits or more, ecdsa-sha2-nistp256/384/521, sk-*)',
    tags,
    auth: 'session',
    body: s.sshKeyBody,
    responses: {
      201: { description: 'The key, with its SHA256 fingerprint', schema: s.sshKeySchema },
      409: err('You already added this key (fields.public_key)'),
      422: INVALID,
    },
    async handler(ctx) {
      ctx.status = 201;
      ctx.body = presentSshKey(await addSshKey(ctx.deps, ctx.actor, ctx.input.body));
    },
  }),
  defineRoute({
    method: 'delete',
    path: '/me/ssh-keys/{id}',
    operationId: 'deleteSshKey',
    description: "Removes one of the signed-in account's SSH keys; another account's key is 404.",
    summary: 'Remove one of your SSH keys',
    tags,
    auth: 'session',
    params: s.idParams,
    responses: { 204: { description: 'Removed' }, 404: err('No such key among yours') },
    async handler(ctx) {
      await removeSshKey(ctx.deps, ctx.actor, ctx.input.params.id);
      ctx.status = 204;
    },
  }),
];

export const routes: RouteDef[] = [...signupRoutes, ...sessionRoutes, ...deviceRoutes, ...sshKeyRoutes] as RouteDef[];
