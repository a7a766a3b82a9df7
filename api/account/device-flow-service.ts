import { UniqueViolationError } from 'objection';
import type { Deps } from '../../system/deps';
import { CliDeviceCode } from '../../db/models/cli-device-code';
import { User } from '../../db/models/user';
import type { Session } from '../../db/models/session';
import type { Actor } from '../../core/actor';
import { appError, errors } from '../../core/errors';
import { generateSecret, randomToken, sha256Hex } from '../lib/token-format';
import { API_PREFIX } from '../lib/paths';
import { USER_CODE_ALPHABET, groupByFour, normalizeCode, randomCode } from './codes';
import { startSession } from './sessions-service';

/** Command-line sign-in through the browser: the OAuth 2.0 device authorization grant (RFC 8628). */

const DEVICE_INTERVAL_SECONDS = 5;
const DEVICE_EXPIRES_IN_SECONDS = 900;
const USER_CODE_LENGTH = 8;
const SLOW_DOWN_STEP_SECONDS = 5; // RFC 8628 section 3.5

type DevicePollError = 'authorization_pending' | 'slow_down' | 'expired_token' | 'access_denied';

/** The poll's answer while there is no session yet (RFC 8628 section 3.5); messages from the catalogue. */
const pollError = (code: DevicePollError) => appError(code);

function verificationUri(deps: Deps): string {
  return `${deps.config.baseUrl}${API_PREFIX}/cli/verify`;
}

/** POST /cli/sessions: a device code for the client (only its digest kept) and a user code for the person. */
export async function startDeviceAuthorization(deps: Deps) {
  // Codes long past their expiry are of no use to anyone; clearing them keeps user codes free.
  await CliDeviceCode.query(deps.knex)
    .where('expires_at', '<', new Date(Date.now() - 86_400_000))
    .delete();
  const deviceCode = randomToken(32);
  for (let attempt = 0; ; attempt++) {
    const userCode = randomCode(USER_CODE_ALPHABET, USER_CODE_LENGTH);
    try {
      await CliDeviceCode.query(deps.knex).insert({
        device_code_digest: sha256Hex(deviceCode),
        user_code: userCode,
        interval_seconds: DEVICE_INTERVAL_SECONDS,
        expires_at: new Date(Date.now() + DEVICE_EXPIRES_IN_SECONDS * 1000),
      });
    } catch (err) {
      if (err instanceof UniqueViolationError && attempt < 5) continue;
      throw err;
    }
    const shown = groupByFour(userCode);
    const uri = verificationUri(deps);
    return {
      device_code: deviceCode,
      user_code: shown,
      verification_uri: uri,
      verification_uri_complete: `${uri}?user_code=${encodeURIComponent(shown)}`,
      interval: DEVICE_INTERVAL_SECONDS,
      expires_in: DEVICE_EXPIRES_IN_SECONDS,
    };
  }
}

/** The pending, unexpired request a user code names (lower case and a missing dash tolerated). */
export async function findPendingByUserCode(deps: Deps, userCode: string): Promise<CliDeviceCode | undefined> {
  const normalized = normalizeCode(userCode);
  if (!new RegExp(`^[${USER_CODE_ALPHABET}]{${USER_CODE_LENGTH}}$`).test(normalized)) return undefined;
  return CliDeviceCode.query(deps.knex)
    .findOne({ user_code: normalized, status: 'pending' })
    .where('expires_at', '>', new Date());
}

/** Approve or deny from a signed-in browser. A code that is unknown, decided or expired: 422 on user_code. */
export async function decideDeviceAuthorization(
  deps: Deps,
  actor: Actor,
  input: { user_code: string },
  decision: 'approved' | 'denied',
) {
  const pending = await findPendingByUserCode(deps, input.user_code);
  const changed = pending
    ? await CliDeviceCode.query(deps.knex)
        .findById(pending.id)
        .where({ status: 'pending' })
        .where('expires_at', '>', new Date())
        .patch({ status: decision, user_id: actor.user.id })
    : 0;
  if (!changed) {
    throw errors.invalid(
      { user_code: 'is not a code waiting for approval: check it, or start the sign-in again on the command line' },
      'No command-line sign-in waits for this code',
    );
  }
  return { user_code: groupByFour(pending!.user_code), status: decision };
}

/**
 * POST /cli/sessions/token: one poll. While pending, polls closer together than the interval get
 * slow_down and lengthen the interval by 5 seconds. Once approved, the first poll gets the `vcs_`
 * bearer (a command-line session) and the device code is used up.
 */
export async function pollDeviceToken(deps: Deps, input: { device_code: string }) {
  const secret = generateSecret('vcs_');
  type Outcome = { error: DevicePollError } | { user: User; session: Session };
  const result = await deps.knex.transaction(async (trx): Promise<Outcome> => {
    const row = await CliDeviceCode.query(trx)
      .findOne({ device_code_digest: sha256Hex(input.device_code) })
      .forUpdate();
    const now = new Date();
    if (!row || row.status === 'consumed' || row.expires_at.getTime() <= now.getTime())
      return { error: 'expired_token' as const };
    if (row.status === 'denied') return { error: 'access_denied' as const };
    if (row.status === 'approved') {
      const user = row.user_id ? await User.query(trx).findById(row.user_id) : undefined;
      if (!user) return { error: 'expired_token' as const };
      await CliDeviceCode.query(trx).findById(row.id).patch({ status: 'consumed', last_polled_at: now });
      return { user, session: await startSession(deps, user.id, 'cli', secret, trx) };
    }
    const tooSoon = row.last_polled_at && now.getTime() - row.last_polled_at.getTime() < row.interval_seconds * 1000;
    await CliDeviceCode.query(trx)
      .findById(row.id)
      .patch({
        last_polled_at: now,
        ...(tooSoon ? { interval_seconds: row.interval_seconds + SLOW_DOWN_STEP_SECONDS } : {}),
      });
    return { error: tooSoon ? ('slow_down' as const) : ('authorization_pending' as const) };
  });
  if (!('user' in result)) throw pollError(result.error);
  const { user, session } = result;
  return {
    access_token: secret,
    token_type: 'bearer' as const,
    expires_in: Math.floor((session.expires_at.getTime() - Date.now()) / 1000),
    user,
  };
}
