/**
 * A project's registry credentials, given to its build steps as files in a private directory the steps
 * are pointed at (never in the release directory, never in the task log):
 * - `.npmrc` with `//host/:_auth=...` per registry (NPM_CONFIG_USERCONFIG);
 * - `config.json` / `auth.json` with `{"auths": {host: {auth}}}` for container tools (DOCKER_CONFIG,
 *   REGISTRY_AUTH_FILE for podman and buildah).
 * Output lines of the steps have the passwords (and their base64 forms) replaced by `[redacted]`.
 */
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { giveTree, type Jail } from '../provider/sandbox';
import type { Deps } from '../../system/deps';
import { open } from '../../system/crypto';
import { registryAad } from '../../db/queries/registries';
import type { OnLine } from '../provider/run-step';
import { secretRedactor } from '../../system/redact';

export interface RegistryAuth {
  env: Record<string, string>;
  redact(onLine: OnLine): OnLine;
  cleanup(): Promise<void>;
}

const NONE: RegistryAuth = { env: {}, redact: (f) => f, async cleanup() {} };

export async function prepareRegistryAuth(deps: Deps, projectId: string, jail?: Jail): Promise<RegistryAuth> {
  const rows = await deps.knex('project_registries').where({ project_id: projectId }).orderBy('host');
  if (rows.length === 0) return NONE;
  // Inside the environment's own HOME (the only place of the host its sandboxed build sees besides its
  // tree), in a directory of its own that no other environment can read; removed after the build.
  const dir = jail
    ? join(jail.home, `.vc-registry-auth-${randomBytes(12).toString('hex')}`)
    : join(deps.config.dataDir, 'build-auth', randomBytes(12).toString('hex'));
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const secrets: string[] = [];
  const npmrc: string[] = [];
  const auths: Record<string, { auth: string }> = {};
  for (const r of rows) {
    const password = open(deps.secrets, r.sealed_password, registryAad(projectId, r.host));
    const auth = Buffer.from(`${r.username}:${password}`).toString('base64');
    secrets.push(password, auth);
    npmrc.push(`//${r.host}/:_auth=${auth}`, `//${r.host}/:always-auth=true`);
    auths[r.host] = { auth };
  }
  const files = {
    '.npmrc': npmrc.join('\n') + '\n',
    'config.json': JSON.stringify({ auths }),
    'auth.json': JSON.stringify({ auths }),
  };
  for (const [name, content] of Object.entries(files)) {
    await writeFile(join(dir, name), content, { mode: 0o600 });
    await chmod(join(dir, name), 0o600);
  }
  if (jail) await giveTree(jail, dir);
  const hide = secretRedactor(
    secrets.filter((s) => s.length >= 4),
    '[redacted]',
  );
  return {
    env: { NPM_CONFIG_USERCONFIG: join(dir, '.npmrc'), DOCKER_CONFIG: dir, REGISTRY_AUTH_FILE: join(dir, 'auth.json') },
    redact: (onLine) => (stream, line) => onLine(stream, hide(line)),
    cleanup: () => rm(dir, { recursive: true, force: true }),
  };
}
