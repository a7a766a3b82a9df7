/**
 * A project's registry credentials, given to its build steps as files in a private directory the steps
 * are pointed at (never in the release directory, never in the task log):
 * - `.npmrc` with `//host/:_auth=...` per registry (NPM_CONFIG_USERCONFIG);
 * - `config.json` / `auth.json` with `{"auths": {host: {auth}}}` for container tools (DOCKER_CONFIG,
 *   REGISTRY_AUTH_FILE for podman and buildah).
 * Output lines of the steps have the passwords (and their base64 forms) replaced by `[redacted]`.
 *
 * The directory lies in the environment's HOME (the one place of the host its sandboxed build sees besides
 * its tree), which the tenant's running web process can change at the same time. So it is made and written
 * only from descriptors (no-follow.ts): `mkdir` of a fresh name from HOME's descriptor (a link planted
 * there is an error, never followed), the files created with O_EXCL | O_NOFOLLOW in the directory's own
 * descriptor. They stay root's (directory 0755, files 0644, readable through the 0700 HOME by the
 * environment's uid alone), so nothing is ever chowned or chmodded by path, and the tenant cannot change
 * them; swapping the directory's name for a link only changes where its own build looks.
 */
import { randomBytes } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { Jail, OnLine } from '../../host/provider';
import type { Deps } from '../../system/deps';
import { open } from '../../system/crypto';
import { secretRedactor } from '../../system/redact';
import { Dir } from '../../host/no-follow';
import { aad } from '../../db/aad';
import { projectRegistries } from '../../db/queries/registries';

interface RegistryAuth {
  env: Record<string, string>;
  redact(onLine: OnLine): OnLine;
  cleanup(): Promise<void>;
}

const NONE: RegistryAuth = { env: {}, redact: (f) => f, async cleanup() {} };

export async function prepareRegistryAuth(deps: Deps, projectId: string, jail?: Jail): Promise<RegistryAuth> {
  const rows = await projectRegistries(deps.knex, projectId);
  if (rows.length === 0) return NONE;
  const secrets: string[] = [];
  const npmrc: string[] = [];
  const auths: Record<string, { auth: string }> = {};
  for (const r of rows) {
    const password = open(deps.secrets, r.sealed_password, aad.registry(projectId, r.host));
    const auth = Buffer.from(`${r.username}:${password}`).toString('base64');
    secrets.push(password, auth);
    npmrc.push(`//${r.host}/:_auth=${auth}`, `//${r.host}/:always-auth=true`);
    auths[r.host] = { auth };
  }
  const files = {
    '.npmrc': `${npmrc.join('\n')}\n`,
    'config.json': JSON.stringify({ auths }),
    'auth.json': JSON.stringify({ auths }),
  };
  // In the environment's HOME (see above); without a sandbox, in a directory of DATA_DIR of root's alone.
  const base = jail ? jail.home : path.join(deps.config.dataDir, 'build-auth');
  const name = `.vc-registry-auth-${randomBytes(12).toString('hex')}`;
  if (!jail) await mkdir(base, { recursive: true, mode: 0o700 });
  const parent = jail
    ? await Dir.open(path.dirname(base), path.basename(base)) // HOME's name is in root's environment directory
    : await Dir.open(base);
  try {
    const fresh = await parent.lstat(name);
    if (fresh) throw new Error(`${name} already exists in ${base}`);
    const dir = await parent.dir(name, { create: 0o700 });
    try {
      const st = await dir.stat();
      if (st.uid !== process.getuid?.()) throw new Error(`${name} in ${base} is not the worker's own directory`);
      for (const [file, content] of Object.entries(files)) await dir.writeNew(file, content, jail ? 0o644 : 0o600);
      if (jail) await dir.chmod(0o755);
    } finally {
      await dir.close();
    }
  } catch (err) {
    await parent.close();
    throw err;
  }
  const where = path.join(base, name);
  const hide = secretRedactor(
    secrets.filter((s) => s.length >= 4),
    '[redacted]',
  );
  return {
    env: {
      NPM_CONFIG_USERCONFIG: path.join(where, '.npmrc'),
      DOCKER_CONFIG: where,
      REGISTRY_AUTH_FILE: path.join(where, 'auth.json'),
    },
    redact: (onLine) => (stream, line) => onLine(stream, hide(line)),
    cleanup: async () => {
      try {
        await parent.remove(name);
      } finally {
        await parent.close();
      }
    },
  };
}
