import type { Knex } from 'knex';
import ipaddr from 'ipaddr.js';
import { loadConfig } from '../../system/config';
import { seal } from '../../system/crypto';
import { loadSecrets, type Secrets } from '../../system/secrets';

// What this migration ran with, inlined (an applied migration never changes): the repository URL parser of
// host/provider/git-remote.ts, outbound.ts's normalizeHost, and core/repository.ts's sealing,
// as they were when it was written.

interface Credentials {
  username: string;
  password: string;
}

type ParsedRepositoryUrl =
  | { ok: true; url: string; credentials: Credentials | null; kind: 'local' | 'http' | 'ssh' | 'git' }
  | { ok: false; reason: string };

const SCHEMES: Record<string, 'http' | 'ssh' | 'git' | undefined> = {
  http: 'http',
  https: 'http',
  ssh: 'ssh',
  'git+ssh': 'ssh',
  'ssh+git': 'ssh',
  git: 'git',
};
const SCHEME = /^([a-z][a-z0-9+.-]*):\/\//i;
// scp-like syntax: [user@]host:path, no slash before the first colon (git's own rule).
const SCP = /^(?:([^@/:]+)@)?(\[[0-9a-f:.]+\]|[^@/:[\]]+):(.*)$/i;

/** `[::1]` -> `::1`, lower case, no trailing dot. */
function normalizeHost(host: string): string {
  return host
    .trim()
    .toLowerCase()
    .replace(/^\[(.*)\]$/, '$1')
    .replace(/\.$/, '');
}

function decode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/** The host as written in a URL's authority must be the host the URL parser reads (no tricks git reads otherwise). */
function rawHost(input: string): string | null {
  const m = /^[a-z][a-z0-9+.-]*:\/\/(?:[^/?#@]*@)?(\[[^\]]*\]|[^/?#:]*)/i.exec(input);
  return m ? m[1] : null;
}

/** The same host: equal names, or the same address however written. */
function sameHost(a: string, b: string): boolean {
  const [x, y] = [normalizeHost(a), normalizeHost(b)];
  if (x === y) return true;
  return (
    ipaddr.isValid(x) &&
    ipaddr.isValid(y) &&
    ipaddr.parse(x).toNormalizedString() === ipaddr.parse(y).toNormalizedString()
  );
}

/**
 * What a client sent as a repository: `https://`, `http://`, `ssh://`, `git://`, scp-style `user@host:path`,
 * an absolute path or a `file://` URL. Returns the URL to keep (for http(s) without any user info; for
 * ssh with its user name, which is part of the address) and the credentials, or why it is refused.
 */
function parseRepositoryUrl(input: string): ParsedRepositoryUrl {
  const scheme = SCHEME.exec(input)?.[1].toLowerCase();
  if (scheme) {
    let u: URL;
    try {
      u = new URL(input);
    } catch {
      return { ok: false, reason: 'is not a valid URL' };
    }
    if (scheme === 'file') {
      if (u.host) return { ok: false, reason: 'must be a file:// URL of this host (file:///path)' };
      return { ok: true, url: input, credentials: null, kind: 'local' };
    }
    const kind = SCHEMES[scheme];
    if (!kind)
      return {
        ok: false,
        reason: 'must be an https://, http://, ssh:// or git:// URL, user@host:path or a local path',
      };
    const raw = rawHost(input);
    if (!u.hostname || raw === null || !sameHost(raw, u.hostname)) {
      return { ok: false, reason: 'must name its host plainly' };
    }
    const username = decode(u.username);
    const password = decode(u.password);
    if (kind === 'http') {
      const credentials = username || password ? { username, password } : null;
      u.username = '';
      u.password = '';
      return { ok: true, url: u.toString(), credentials, kind };
    }
    if (password) return { ok: false, reason: 'must not carry a password for ssh or git:// (use https with a token)' };
    return { ok: true, url: input, credentials: null, kind };
  }
  if (input.startsWith('/')) return { ok: true, url: input, credentials: null, kind: 'local' };
  const scp = SCP.exec(input);
  if (scp && !/^[a-z0-9+.-]+::/i.test(input)) {
    if (scp[1]?.includes(':'))
      return { ok: false, reason: 'must not carry a password for ssh (use https with a token)' };
    return { ok: true, url: input, credentials: null, kind: 'ssh' };
  }
  return {
    ok: false,
    reason: 'must be an https://, http://, ssh:// or git:// URL, user@host:path or an absolute local path',
  };
}

function sealCredentials(secrets: Secrets, projectId: string, credentials: Credentials): string {
  return seal(
    secrets,
    JSON.stringify({ username: credentials.username, password: credentials.password }),
    `projects.repository_credentials:${projectId}`,
  );
}

/**
 * Repository credentials apart from the URL, sealed (core/repository.ts): existing rows whose URL
 * carries user info get the URL without it and the credentials sealed, under the console's encryption
 * key (ENCRYPTION_KEY, else the one kept under DATA_DIR, as the processes that open it later use).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('projects', (t) => {
    t.text('repository_credentials');
  });
  const rows: Array<{ id: string; repository_url: string }> = await knex('projects')
    .whereRaw("repository_url ~ '^[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*@'")
    .select('id', 'repository_url');
  let secrets: Secrets | undefined;
  for (const row of rows) {
    const parsed = parseRepositoryUrl(row.repository_url);
    // Userinfo the parser keeps in the URL (an ssh user name) is an address, not a credential.
    if (!parsed.ok) {
      // An ssh or git:// URL with a password, refused today: keep the address, drop the password.
      await knex('projects')
        .where({ id: row.id })
        .update({ repository_url: row.repository_url.replace(/^([a-z][a-z0-9+.-]*:\/\/[^:/?#@]*):[^/?#@]*@/i, '$1@') });
      continue;
    }
    if (!parsed.credentials && parsed.url === row.repository_url) continue;
    if (parsed.credentials) {
      const config = loadConfig(process.env);
      secrets ??= loadSecrets(config.dataDir, {
        tokenHmacKey: config.tokenHmacKey,
        encryptionKey: config.encryptionKey,
      });
    }
    await knex('projects')
      .where({ id: row.id })
      .update({
        repository_url: parsed.url,
        repository_credentials: parsed.credentials ? sealCredentials(secrets!, row.id, parsed.credentials) : null,
      });
  }
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('projects', (t) => {
    t.dropColumn('repository_credentials');
  });
}
