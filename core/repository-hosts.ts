/**
 * A team's repository hosts as git uses them. Precedence (README "Repository hosts"): credentials the
 * project was connected with (in its URL, sealed to the project) win; only a project without its own
 * gets the team's host credential for its URL:
 * - an http:// or https:// URL: the team's `https` host whose `host` is the URL's authority (name and
 *   port when not the scheme's default, lower case): user name and token through GIT_ASKPASS;
 * - an ssh URL (`ssh://` or `user@host:path`): the team's `ssh` host of that host name: its private key
 *   through GIT_SSH_COMMAND's IdentityFile (host/git-run.ts).
 * The token or key is sealed to the row (system/crypto.ts) and opened only here, for the git call.
 */
import type { Knex } from 'knex';
import { parseRepositoryUrl, sshHost, type GitRepo } from '../host/git-remote';
import { normalizeHost } from '../host/outbound';
import { open, seal } from '../system/crypto';
import type { Secrets } from '../system/secrets';
import { aad } from '../db/aad';

type Keys = Pick<Secrets, 'encryptionKey' | 'previousEncryptionKeys'>;

export function sealHostSecret(secrets: Keys, id: string, secret: string): string {
  return seal(secrets, secret, aad.repositoryHost(id));
}

/** The kind of host and the host key a repository URL is looked up by, or null (local, git://, unparsable). */
function hostKeyOf(url: string): { kind: 'https' | 'ssh'; host: string } | null {
  const parsed = parseRepositoryUrl(url);
  if (!parsed.ok) return null;
  if (parsed.kind === 'http') return { kind: 'https', host: new URL(parsed.url).host.toLowerCase() };
  if (parsed.kind === 'ssh') return { kind: 'ssh', host: normalizeHost(sshHost(parsed.url)) };
  return null;
}

/**
 * `repo` with the team's host credential added when it has none of its own and a host of the team
 * matches its URL; otherwise `repo` unchanged.
 */
export async function withHostCredentials(knex: Knex, secrets: Keys, teamId: string, repo: GitRepo): Promise<GitRepo> {
  if (repo.credentials || repo.sshKey) return repo;
  const key = hostKeyOf(repo.url);
  if (!key) return repo;
  const row = await knex('repository_hosts').where({ team_id: teamId, kind: key.kind, host: key.host }).first();
  if (!row) return repo;
  const secret = open(secrets, row.sealed_secret, aad.repositoryHost(row.id));
  return key.kind === 'https'
    ? { ...repo, credentials: { username: row.username, password: secret } }
    : { ...repo, sshKey: secret };
}
