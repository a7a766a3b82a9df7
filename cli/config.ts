import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { CliError } from './errors';

/**
 * Where the client keeps its sign-ins: `$XDG_CONFIG_HOME/vc-console/credentials.json` (else
 * `~/.config/...`), one `vcs_` credential per console origin, the file mode 0600 and its folder 0700.
 */

const DEFAULT_ORIGIN = 'http://localhost:8080';

interface StoredSession {
  token: string;
  user: { id: string; email: string; name: string };
  signed_in_at: string;
}

interface Store {
  /** The console of the last `service login`: used when neither --api nor VC_API says. */
  default_api?: string;
  sessions: Record<string, StoredSession>;
}

function configDir(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_CONFIG_HOME?.trim() ? env.XDG_CONFIG_HOME : join(env.HOME || homedir(), '.config');
  return join(base, 'vc-console');
}

export const credentialsPath = (env: NodeJS.ProcessEnv = process.env) => join(configDir(env), 'credentials.json');

export function readStore(env: NodeJS.ProcessEnv = process.env): Store {
  const file = credentialsPath(env);
  if (!existsSync(file)) return { sessions: {} };
  try {
    const parsed = JSON.parse(readFileSync(file, 'utf8')) as Partial<Store>;
    return { default_api: parsed.default_api, sessions: parsed.sessions ?? {} };
  } catch {
    throw new CliError(`${file} is not readable JSON: remove it and run \`service login\` again`);
  }
}

/** Written to a temporary file (mode 0600 from the start) and renamed over the old one. */
export function writeStore(store: Store, env: NodeJS.ProcessEnv = process.env): void {
  const dir = configDir(env);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = credentialsPath(env);
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(store, null, 2) + '\n', { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, file);
}

/** `http://host:port` from what a person types (a trailing slash or /api/vc/v1 tolerated). */
function normalizeOrigin(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    throw new CliError(`The console URL "${raw}" is not a URL: give its origin, e.g. --api http://localhost:8080`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new CliError(`The console URL must start with http:// or https://, e.g. --api http://localhost:8080`);
  }
  const path = url.pathname.replace(/\/+$/, '').replace(/\/api\/vc\/v1$/, '');
  return `${url.protocol}//${url.host}${path}`;
}

export interface Target {
  origin: string;
  /** The bearer to send: VC_TOKEN, else the stored sign-in for this origin. */
  credential?: string;
  via?: 'VC_TOKEN' | 'login';
}

/** --api, else VC_API, else the last login's console, else localhost:8080; VC_TOKEN over a stored sign-in. */
export function resolveTarget(api: string | undefined, env: NodeJS.ProcessEnv = process.env): Target {
  const store = readStore(env);
  const origin = normalizeOrigin(api ?? (env.VC_API?.trim() || undefined) ?? store.default_api ?? DEFAULT_ORIGIN);
  const token = env.VC_TOKEN?.trim();
  if (token) {
    if (!token.startsWith('vcp_')) {
      throw new CliError(
        'VC_TOKEN must be a personal access token (vcp_...): issue one in the console under Account > Tokens',
      );
    }
    return { origin, credential: token, via: 'VC_TOKEN' };
  }
  const session = store.sessions[origin];
  return session ? { origin, credential: session.token, via: 'login' } : { origin };
}
