import { Session } from '../../db/models/session';
import type { User } from '../../db/models/user';
import { generateSecret, randomToken, sessionDigest } from '../../api/lib/token-format';
import { readStore, writeStore } from '../../cli/config';
import type { TestContext } from './context';

/**
 * A command-line session (as an approved `service login` leaves it) stored in the client's config under
 * `home`: for tests whose subject is not the sign-in (that one is test/cli/login.test.ts, in a browser).
 */
export async function storeCliSession(t: TestContext, user: User, home: Record<string, string>): Promise<string> {
  const secret = generateSecret('vcs_');
  await Session.query(t.deps.knex).insert({
    secret_digest: sessionDigest(secret),
    user_id: user.id,
    kind: 'cli',
    csrf_token: randomToken(),
    expires_at: new Date(Date.now() + 86_400_000),
  });
  const env = { ...process.env, ...home };
  const store = readStore(env);
  store.sessions[t.baseUrl] = {
    token: secret,
    user: { id: user.id, email: user.email, name: user.name },
    signed_in_at: new Date().toISOString(),
  };
  writeStore(store, env);
  return secret;
}
