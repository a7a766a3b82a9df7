import type { Knex } from 'knex';
import { UniqueViolationError } from 'objection';
import type { Deps } from '../../system/deps';
import { User } from '../../db/models/user';
import { EmailConfirmation } from '../../db/models/email-confirmation';
import { confirmationEmail } from '../../system/mail/templates';
import { appError, errors } from '../lib/errors';
import { hashPassword } from '../lib/passwords';
import { CONFIRMATION_ALPHABET, groupByFour, normalizeCode, randomCode } from './codes';
import { sha256Hex } from '../lib/token-format';

const CODE_LENGTH = 12; // 22^12: about 53 bits
const CODE_TTL_MS = 24 * 3600_000;
/** Fresh codes an account may be sent per hour (sign-up included), so resend cannot flood a mailbox. */
const CODES_PER_HOUR = 5;

const emailTaken = () =>
  appError('email_taken', 'An account with this e-mail address already exists; sign in instead', {
    fields: {
      email: 'already has an account',
    },
  });

/** Stores the digest of a new code (older unused codes stop working) and returns the code. */
async function issueCode(trx: Knex, userId: string): Promise<{ code: string; expiresAt: Date }> {
  const now = new Date();
  await EmailConfirmation.query(trx)
    .where({ user_id: userId })
    .whereNull('used_at')
    .where('expires_at', '>', now)
    .patch({ expires_at: now });
  const code = randomCode(CONFIRMATION_ALPHABET, CODE_LENGTH);
  const expiresAt = new Date(now.getTime() + CODE_TTL_MS);
  await EmailConfirmation.query(trx).insert({ user_id: userId, code_digest: sha256Hex(code), expires_at: expiresAt });
  return { code, expiresAt };
}

async function sendCode(deps: Deps, user: User, code: string, expiresAt: Date): Promise<void> {
  const mail = confirmationEmail({ name: user.name, code: groupByFour(code), baseUrl: deps.config.baseUrl, expiresAt });
  try {
    await deps.mailer.send({ to: user.email, ...mail });
  } catch (err) {
    // The account stands; POST /signup/resend sends a new code. Nothing secret is logged.
    deps.logger.warn({ userId: user.id, err: (err as Error).message }, 'confirmation e-mail not sent');
  }
}

const pendingSignUp = (until: Date) =>
  appError(
    'email_taken',
    `A sign-up for this address waits for its confirmation code until ${until.toISOString()}: enter the e-mailed code ` +
      '(POST /signup/confirm) or ask for a new one (POST /signup/resend); after that time the address can be signed up again',
    { fields: { email: 'has a sign-up waiting for confirmation' } },
  );

/**
 * An unconfirmed sign-up lives as long as its newest confirmation code: 24 hours from the sign-up (or
 * from the last resend). Until then the address is taken (409: the code went to the address, so only
 * its owner can finish it); after that the address is free again: the stale account is removed by the
 * next sign-up for it (and by the daily `prune-expired` schedule), so an address never stays blocked
 * by someone who signed it up without owning it.
 */
export async function pendingSignUpUntil(knex: Knex, userId: string): Promise<Date | undefined> {
  const row = await EmailConfirmation.query(knex)
    .where({ user_id: userId })
    .whereNull('used_at')
    .max('expires_at as until')
    .first();
  const until = (row as unknown as { until: Date | null } | undefined)?.until;
  return until && until.getTime() > Date.now() ? until : undefined;
}

/** Removes an unconfirmed account whose sign-up has expired (no live code); answers whether it did. */
export async function removeExpiredSignUp(knex: Knex, userId: string): Promise<boolean> {
  const removed = await User.query(knex)
    .findById(userId)
    .whereNull('email_confirmed_at')
    .whereNotExists(
      EmailConfirmation.query(knex).where('user_id', userId).whereNull('used_at').where('expires_at', '>', new Date()),
    )
    .delete();
  return removed > 0;
}

export async function signUp(deps: Deps, input: { email: string; password: string; name: string }): Promise<User> {
  const existing = await User.query(deps.knex).findOne({ email: input.email });
  if (existing?.email_confirmed_at) throw emailTaken();
  if (existing) {
    const until = await pendingSignUpUntil(deps.knex, existing.id);
    if (until) throw pendingSignUp(until);
  }
  const passwordHash = await hashPassword(input.password);
  let user: User;
  let issued: { code: string; expiresAt: Date };
  try {
    ({ user, issued } = await deps.knex.transaction(async (trx) => {
      // The address's expired sign-up (checked again here: a code may have been sent since) makes way.
      if (existing && !(await removeExpiredSignUp(trx, existing.id))) throw emailTaken();
      const u = await User.query(trx).insertAndFetch({
        email: input.email,
        name: input.name,
        password_hash: passwordHash,
        email_confirmed_at: null,
      });
      return { user: u, issued: await issueCode(trx, u.id) };
    }));
  } catch (err) {
    if (err instanceof UniqueViolationError) throw emailTaken();
    throw err;
  }
  await sendCode(deps, user, issued.code, issued.expiresAt);
  return user;
}

/** A code that is wrong, used or expired answers 422 on `code`, and counts as a failed credential. */
export async function confirmEmail(deps: Deps, address: string, input: { code: string }): Promise<User> {
  await deps.guards.assertAddressAllowed(address);
  const digest = sha256Hex(normalizeCode(input.code));
  const user = await deps.knex.transaction(async (trx) => {
    const now = new Date();
    const used = await EmailConfirmation.query(trx)
      .where({ code_digest: digest })
      .whereNull('used_at')
      .where('expires_at', '>', now)
      .patch({ used_at: now })
      .returning('user_id');
    const row = (used as unknown as EmailConfirmation[])[0];
    if (!row) return undefined;
    await User.query(trx).findById(row.user_id).whereNull('email_confirmed_at').patch({ email_confirmed_at: now });
    return User.query(trx).findById(row.user_id);
  });
  if (!user) {
    await deps.guards.recordFailure(address);
    throw errors.invalid({ code: 'is wrong, has expired or was already used' }, 'The confirmation code does not work');
  }
  return user;
}

/**
 * Sends a fresh code when the account exists and is unconfirmed. The caller answers 202 whatever
 * happens here, and does not wait for it, so neither the answer nor its timing reveals the account.
 */
export async function resendConfirmation(deps: Deps, input: { email: string }): Promise<void> {
  const user = await User.query(deps.knex).findOne({ email: input.email });
  if (!user || user.email_confirmed_at) return;
  const recent = await EmailConfirmation.query(deps.knex)
    .where({ user_id: user.id })
    .where('created_at', '>', new Date(Date.now() - 3600_000))
    .resultSize();
  if (recent >= CODES_PER_HOUR) return;
  const issued = await deps.knex.transaction((trx) => issueCode(trx, user.id));
  await sendCode(deps, user, issued.code, issued.expiresAt);
}
