import type { Knex } from 'knex';
import { UniqueViolationError } from 'objection';
import type { Deps } from '../../system/deps';
import { User } from '../../db/models/user';
import { EmailConfirmation } from '../../db/models/email-confirmation';
import { confirmationEmail } from '../../system/mail/templates';
import { appError, errors } from '../../core/errors';
import { hashPassword, verifyPassword } from '../../core/passwords';
import { CONFIRMATION_ALPHABET, groupByFour, normalizeCode, randomCode } from './codes';
import { sha256Hex } from '../lib/token-format';

const CODE_LENGTH = 12; // 22^12: about 53 bits
const CODE_TTL_MS = 24 * 3600_000;
/** Fresh codes an account may be sent per hour (sign-up included), so resend cannot flood a mailbox. */
const CODES_PER_HOUR = 5;
/**
 * The same sign-up sent again this soon after its code (a browser sending the POST again when its answer was lost,
 * a double click) is the same sign-up: it is answered again, with no second code. The same holds for a code's
 * confirmation sent again this soon after it was used.
 */
const REPEAT_WINDOW_MS = 30_000;

const emailTaken = () =>
  appError('email_taken', 'An account with this e-mail address already exists; sign in instead', {
    fields: {
      email: 'already has an account',
    },
  });

/** The sign-up a code is sent for: what confirming it sets on the account. */
interface SignUpFor {
  passwordHash: string;
  name: string;
}

/**
 * Stores the digest of a new code, bound to the sign-up it is sent for, and returns the code. The unused codes of
 * other sign-ups stop working. Those of the same sign-up (a resend's: the same password digest and name) keep
 * working, so whichever of its e-mails the owner opens confirms it.
 */
async function issueCode(trx: Knex, userId: string, signUp: SignUpFor): Promise<{ code: string; expiresAt: Date }> {
  const now = new Date();
  await EmailConfirmation.query(trx)
    .where({ user_id: userId })
    .whereNull('used_at')
    .where('expires_at', '>', now)
    .where((q) =>
      q
        .whereNull('password_hash')
        .orWhereNot('password_hash', signUp.passwordHash)
        .orWhereNull('name')
        .orWhereNot('name', signUp.name),
    )
    .patch({ expires_at: now });
  const code = randomCode(CONFIRMATION_ALPHABET, CODE_LENGTH);
  const expiresAt = new Date(now.getTime() + CODE_TTL_MS);
  await EmailConfirmation.query(trx).insert({
    user_id: userId,
    code_digest: sha256Hex(code),
    expires_at: expiresAt,
    password_hash: signUp.passwordHash,
    name: signUp.name,
  });
  return { code, expiresAt };
}

/** Seconds until one more code may be sent to the account's address, or 0 when one may be sent now. */
async function codeWait(knex: Knex, userId: string): Promise<number> {
  const recent = await EmailConfirmation.query(knex)
    .where({ user_id: userId })
    .where('created_at', '>', new Date(Date.now() - 3600_000))
    .orderBy('created_at')
    .select('created_at');
  if (recent.length < CODES_PER_HOUR) return 0;
  return Math.max(1, Math.ceil((recent[0].created_at.getTime() + 3600_000 - Date.now()) / 1000));
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

/**
 * An unconfirmed sign-up lives as long as its newest confirmation code: 24 hours from the sign-up (or from
 * the last resend). A new sign-up for the address, by anyone, replaces it: the address's owner is never
 * locked out by someone who signed it up without owning it. The new sign-up's password and name wait with
 * its code, and the older codes stop working, so only the code mailed for a sign-up confirms its password.
 * An expired sign-up is removed by the next sign-up for its address (and by the daily `prune-expired`
 * schedule). The same sign-up sent again within REPEAT_WINDOW_MS of its code replaces nothing: it is answered
 * again, and its code still works.
 */
async function pendingSignUpUntil(knex: Knex, userId: string): Promise<Date | undefined> {
  const row = await EmailConfirmation.query(knex)
    .where({ user_id: userId })
    .whereNull('used_at')
    .max('expires_at as until')
    .first();
  const until = (row as unknown as { until: Date | null } | undefined)?.until;
  return until && until.getTime() > Date.now() ? until : undefined;
}

/**
 * Whether `input` repeats the waiting sign-up whose code was sent in the last REPEAT_WINDOW_MS: the same name and
 * password (checked against the digest kept with the code).
 */
async function repeatsWaitingSignUp(knex: Knex, userId: string, input: { password: string; name: string }) {
  const newest = await EmailConfirmation.query(knex)
    .where({ user_id: userId })
    .whereNull('used_at')
    .where('expires_at', '>', new Date())
    .where('created_at', '>', new Date(Date.now() - REPEAT_WINDOW_MS))
    .orderBy('created_at', 'desc')
    .first();
  return (
    !!newest?.password_hash &&
    newest.name === input.name &&
    (await verifyPassword(newest.password_hash, input.password))
  );
}

/** Removes an unconfirmed account whose sign-up has expired (no live code); answers whether it did. */
async function removeExpiredSignUp(knex: Knex, userId: string): Promise<boolean> {
  const removed = await User.query(knex)
    .findById(userId)
    .whereNull('email_confirmed_at')
    .whereNotExists(
      EmailConfirmation.query(knex).where('user_id', userId).whereNull('used_at').where('expires_at', '>', new Date()),
    )
    .delete();
  return removed > 0;
}

export async function signUp(
  deps: Deps,
  input: { email: string; password: string; name: string },
  retried = false,
): Promise<User> {
  const existing = await User.query(deps.knex).findOne({ email: input.email });
  if (existing?.email_confirmed_at) throw emailTaken();
  const passwordHash = await hashPassword(input.password);
  const signUpFor = { passwordHash, name: input.name };
  let user: User;
  let issued: { code: string; expiresAt: Date } | null;
  try {
    ({ user, issued } = await deps.knex.transaction(async (trx) => {
      if (existing) {
        // Checked again under the row's lock: it may have been confirmed since.
        const pending = await User.query(trx).findById(existing.id).forUpdate();
        if (pending?.email_confirmed_at) throw emailTaken();
        if (pending && (await pendingSignUpUntil(trx, pending.id))) {
          if (await repeatsWaitingSignUp(trx, pending.id, input)) return { user: pending, issued: null };
          // Replaces the waiting sign-up, within the mails an address may get in an hour.
          const wait = await codeWait(trx, pending.id);
          if (wait > 0) {
            throw errors.rateLimited(
              wait,
              `This address was sent ${CODES_PER_HOUR} confirmation codes in the last hour; sign up again later`,
            );
          }
          const u = await User.query(trx).patchAndFetchById(pending.id, {
            name: input.name,
            password_hash: passwordHash,
            created_at: new Date(),
          } as Partial<User>);
          return { user: u, issued: await issueCode(trx, u.id, signUpFor) };
        }
        // The address's expired sign-up makes way.
        if (pending && !(await removeExpiredSignUp(trx, pending.id))) throw emailTaken();
      }
      const u = await User.query(trx).insertAndFetch({
        email: input.email,
        name: input.name,
        password_hash: passwordHash,
        email_confirmed_at: null,
      });
      return { user: u, issued: await issueCode(trx, u.id, signUpFor) };
    }));
  } catch (err) {
    // Another sign-up for the address was made meanwhile: answered as one made just before (once).
    if (err instanceof UniqueViolationError) {
      if (retried) throw emailTaken();
      return signUp(deps, input, true);
    }
    throw err;
  }
  if (issued) await sendCode(deps, user, issued.code, issued.expiresAt);
  return user;
}

/**
 * The account a code confirmed in the last REPEAT_WINDOW_MS: the same confirmation sent again (a browser sending the
 * POST again when its answer was lost) is answered as the first was, not as a used code.
 */
async function repeatedConfirmation(knex: Knex, digest: string, now: Date): Promise<User | undefined> {
  const used = await EmailConfirmation.query(knex)
    .where({ code_digest: digest })
    .where('used_at', '>', new Date(now.getTime() - REPEAT_WINDOW_MS))
    .first();
  return used ? User.query(knex).findById(used.user_id).whereNotNull('email_confirmed_at') : undefined;
}

/**
 * A code that is wrong, used (more than REPEAT_WINDOW_MS ago) or expired answers 422 on `code`, and counts as a
 * failed credential.
 */
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
      .returning(['user_id', 'password_hash', 'name']);
    const row = (used as unknown as EmailConfirmation[])[0];
    if (!row) return repeatedConfirmation(trx, digest, now);
    // The sign-up's other codes (a resend's) have done their work.
    await EmailConfirmation.query(trx)
      .where({ user_id: row.user_id })
      .whereNull('used_at')
      .where('expires_at', '>', now)
      .patch({ expires_at: now });
    // The code confirms the sign-up it was sent for: its password and name become the account's.
    await User.query(trx)
      .findById(row.user_id)
      .whereNull('email_confirmed_at')
      .patch({
        email_confirmed_at: now,
        ...(row.password_hash ? { password_hash: row.password_hash } : {}),
        ...(row.name ? { name: row.name } : {}),
      });
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
  const sent = await deps.knex.transaction(async (trx) => {
    // Under the row's lock, as a sign-up that replaces this one takes it: the code is for the waiting sign-up.
    const user = await User.query(trx).findOne({ email: input.email }).forUpdate();
    if (!user || user.email_confirmed_at) return undefined;
    if ((await codeWait(trx, user.id)) > 0) return undefined;
    // The same sign-up again: the code confirms the password and name it was made with, as its earlier codes do.
    return { user, ...(await issueCode(trx, user.id, { passwordHash: user.password_hash, name: user.name })) };
  });
  if (sent) await sendCode(deps, sent.user, sent.code, sent.expiresAt);
}
