/**
 * The data plane runs unprivileged (docs/edge.md "Users"). HAProxy's master reads the configuration and binds
 * the ports as root (so EDGE_PORT may be 80), then its workers, which parse every tenant request, run as the
 * `haproxy` user of Debian's package (`user`/`group` in global). At runtime a worker reaches only the control
 * plane's two unix sockets (the request log's reader, the legacy password checker): those sockets and their
 * directories are given to the `haproxy` group (directories 0710, sockets 0660); every other file of the edge
 * stays root's own (0600 in 0700 directories). Varnish's cache runs as `vcache` (its own jail) the same way.
 *
 * Both need to pass through DATA_DIR: DATA_DIR/edge is 0711 (others may pass, not list), and every directory
 * above it must let others pass. When that is not so, or the control plane is not root, or there is no
 * `haproxy` user, the workers keep the control plane's user and `dataPlaneUser` says why.
 */
import { chmodSync, chownSync, mkdirSync, readFileSync } from 'node:fs';
import { closedAboveSync } from '../host/traversable';
import path from 'node:path';

interface DataPlaneUser {
  user: string;
  group: string;
  uid: number;
  gid: number;
}

const DATA_PLANE_USER = 'haproxy';

/** `name`'s id in /etc/passwd or /etc/group (the 3rd field), or null. */
function idOf(file: string, name: string): number | null {
  try {
    for (const line of readFileSync(file, 'utf8').split('\n')) {
      const f = line.split(':');
      if (f[0] === name && /^\d+$/.test(f[2] ?? '')) return Number(f[2]);
    }
  } catch {
    // no such file: no such user
  }
  return null;
}

/**
 * DATA_DIR and DATA_DIR/edge: others may pass (HAProxy's workers, Varnish's jail user), not list; DATA_DIR as
 * the worker makes it for the sandboxes (host/provider/sandbox.ts), whichever process starts first.
 */
export function openEdgeDir(dataDir: string): string {
  const dir = path.join(dataDir, 'edge');
  mkdirSync(dir, { recursive: true, mode: 0o711 });
  chmodSync(dataDir, 0o711);
  chmodSync(dir, 0o711);
  return dir;
}

/**
 * The user HAProxy's workers run as, or null with the reason they keep the control plane's. Call it after
 * `openEdgeDir` (DATA_DIR/edge itself is then passable).
 */
export function dataPlaneUser(dataDir: string): { user: DataPlaneUser | null; reason?: string } {
  if (process.getuid?.() !== 0) return { user: null, reason: 'the edge does not run as root' };
  const uid = idOf('/etc/passwd', DATA_PLANE_USER);
  const gid = idOf('/etc/group', DATA_PLANE_USER);
  if (uid === null || gid === null) return { user: null, reason: `there is no "${DATA_PLANE_USER}" user` };
  const closed = closedAboveSync(path.join(dataDir, 'edge'), { self: true })?.dir ?? null;
  if (closed)
    return {
      user: null,
      reason: `${closed} does not let others pass through (chmod o+x ${closed}, as for DATA_DIR)`,
    };
  return { user: { user: DATA_PLANE_USER, group: DATA_PLANE_USER, uid, gid } };
}

/** A unix socket (and its directory) HAProxy's workers connect to: the data plane's group may, nobody else. */
export function shareSocket(socket: string, user: DataPlaneUser | null): void {
  if (!user) return;
  const dir = path.dirname(socket);
  chownSync(dir, 0, user.gid);
  chmodSync(dir, 0o710);
  chownSync(socket, 0, user.gid);
  chmodSync(socket, 0o660);
}

/** HAProxy's `global` lines for the workers' user. */
export function dataPlaneUserLines(user: DataPlaneUser | null): string[] {
  return user ? [`user ${user.user}`, `group ${user.group}`] : [];
}
