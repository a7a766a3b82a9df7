/**
 * The one way root (the worker, the API) touches a tree that someone else can change: a tenant's HOME,
 * release tree and volume, and the snapshots of a backup destination. Node has no openat(2), so every name
 * is reached from a directory descriptor, one name at a time, as `/proc/self/fd/<fd>/<name>` opened with
 * O_NOFOLLOW (a symlink planted there is an error, never followed), and what was opened is checked with
 * fstat. Ownership and modes are changed through the descriptor (fchown, fchmod), never by path. Commands
 * that work on a whole tree (tar, chown -R, rm -rf) get the directory as their descriptor 3 (4) and run in
 * `/proc/self/fd/3`; the GNU tools walk from there with openat and O_NOFOLLOW themselves.
 *
 * A trusted base (a directory of the operator's or root's, such as `<root>/volumes`) is opened by path; the
 * names below it never are.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { constants, type Stats } from 'node:fs';
import { lstat, mkdir, open, readdir, readlink, rename, rmdir, unlink, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { closed } from './child-output';

// (libuv opens every file with O_CLOEXEC)
const { O_RDONLY, O_DIRECTORY, O_NOFOLLOW, O_NONBLOCK } = constants;
const DIR_FLAGS = O_RDONLY | O_DIRECTORY | O_NOFOLLOW;

/** One name inside a directory: never empty, `.`, `..` or containing a slash. */
function checkName(name: string): string {
  if (!name || name === '.' || name === '..' || name.includes('/') || name.includes('\0')) {
    throw new Error(`not a single file name: ${JSON.stringify(name)}`);
  }
  return name;
}

/** An open directory: every operation below is relative to it and follows no symlink of the last name. */
export class Dir {
  private constructor(
    private readonly handle: FileHandle,
    /** For messages only: where it was when opened. */
    readonly where: string,
  ) {}

  get fd(): number {
    return this.handle.fd;
  }

  /** Opens `base` by path (a directory root or the operator owns), then each of `names` without following links. */
  static async open(base: string, ...names: string[]): Promise<Dir> {
    let dir = new Dir(await open(base, O_RDONLY | O_DIRECTORY), base);
    for (const name of names) {
      const next = await dir.dir(name).finally(() => dir.close());
      dir = next;
    }
    return dir;
  }

  /** Opens an absolute path from `/` with no symlink anywhere in it (a real path, as stored). */
  static async openReal(absolute: string): Promise<Dir> {
    if (!path.isAbsolute(absolute)) throw new Error(`not an absolute path: ${absolute}`);
    return Dir.open('/', ...path.resolve(absolute).split('/').filter(Boolean));
  }

  /** The magic path of `name` in this directory (for calls that take a path and do not follow its last name). */
  at(name: string): string {
    return `/proc/self/fd/${this.fd}/${checkName(name)}`;
  }

  /** This directory's own status (fstat). */
  stat(): Promise<Stats> {
    return this.handle.stat();
  }

  /** The subdirectory `name`; a symlink or anything but a directory there is an error (ELOOP, ENOTDIR). */
  async dir(name: string, o: { create?: number } = {}): Promise<Dir> {
    if (o.create !== undefined) {
      await mkdir(this.at(name), { mode: o.create }).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== 'EEXIST') throw err;
      });
    }
    return new Dir(await open(this.at(name), DIR_FLAGS), path.join(this.where, name));
  }

  /** lstat of `name` (its link, if it is one); null when absent. */
  async lstat(name: string): Promise<Stats | null> {
    return lstat(this.at(name)).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return null;
      throw err;
    });
  }

  readlink(name: string): Promise<string> {
    return readlink(this.at(name));
  }

  /** Names in this directory, sorted. */
  async list(): Promise<string[]> {
    return (await readdir(`/proc/self/fd/${this.fd}`)).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  }

  /**
   * Opens the regular file `name` (O_NOFOLLOW, O_NONBLOCK so a FIFO never blocks); anything but a regular
   * file is an error. `flags` adds O_WRONLY, O_CREAT | O_EXCL and the like.
   */
  async file(name: string, flags = O_RDONLY, mode = 0o600): Promise<FileHandle> {
    const fh = await open(this.at(name), flags | O_NOFOLLOW | O_NONBLOCK, mode);
    const st = await fh.stat();
    if (!st.isFile()) {
      await fh.close();
      throw Object.assign(new Error(`${path.join(this.where, name)} is not a regular file`), { code: 'ENOTREG' });
    }
    return fh;
  }

  /** Creates the file `name`, which must not exist (no link is followed), with `content`. */
  async writeNew(name: string, content: string | Buffer, mode = 0o600): Promise<void> {
    const fh = await this.file(name, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, mode);
    try {
      await fh.chmod(mode); // exactly, whatever the umask
      await fh.writeFile(content);
    } finally {
      await fh.close();
    }
  }

  /** Removes the entry `name` (a link itself, never its target); nothing when absent. */
  async unlink(name: string): Promise<void> {
    await unlink(this.at(name)).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT') throw err;
    });
  }

  async rmdir(name: string): Promise<void> {
    await rmdir(this.at(name));
  }

  /** Renames `name` to `to` in `into` (this directory by default); links are moved, not followed. */
  async rename(name: string, to: string, into: Dir = this): Promise<void> {
    await rename(this.at(name), into.at(to));
  }

  /** Removes `name` and everything under it, whatever it is (`rm -rf` from this descriptor); nothing when absent. */
  async remove(name: string): Promise<void> {
    // Nothing there, or no directory: no `rm` to spawn (a spawn forks the worker, a large process). What lstat saw
    // may change before the unlink; then rm does it, as it would have.
    const st = await this.lstat(name);
    if (st === null) return;
    if (!st.isDirectory()) {
      const gone = await unlink(this.at(name)).then(
        () => true,
        (err: NodeJS.ErrnoException) => err.code === 'ENOENT',
      );
      if (gone) return;
    }
    await runIn([this], 'rm', ['-rf', '--one-file-system', '--', checkName(name)]);
  }

  /** Gives the directory itself to `uid:gid` (fchown). */
  async chown(uid: number, gid: number): Promise<void> {
    await this.handle.chown(uid, gid);
  }

  async chmod(mode: number): Promise<void> {
    await this.handle.chmod(mode);
  }

  /** Gives everything under this directory, and itself, to `uid:gid` (`chown -R -P` from the descriptor). */
  async chownTree(uid: number, gid: number): Promise<void> {
    await runIn([this], 'chown', ['-R', '-P', `${uid}:${gid}`, '.']);
  }

  close(): Promise<void> {
    return this.handle.close().catch(() => undefined);
  }
}

/** Opens, uses and closes a directory (see Dir.open). */
export async function withDir<T>(base: string, names: string[], fn: (dir: Dir) => Promise<T>): Promise<T> {
  const dir = await Dir.open(base, ...names);
  try {
    return await fn(dir);
  } finally {
    await dir.close();
  }
}

/**
 * Spawns `cmd` with `dirs` as its descriptors 3, 4, … and its working directory `/proc/self/fd/3`: the
 * command reaches the trees by their descriptors, never by a path a tenant could change meanwhile.
 */
export function spawnIn(dirs: Dir[], cmd: string, args: string[]): ChildProcessWithoutNullStreams {
  return spawn(cmd, args, {
    cwd: '/proc/self/fd/3',
    env: { PATH: process.env.PATH, LC_ALL: 'C' },
    stdio: ['pipe', 'pipe', 'pipe', ...dirs.map((d) => d.fd)],
  }) as ChildProcessWithoutNullStreams;
}

/** Runs `cmd` as spawnIn does and waits; a non-zero exit is an error with the end of its stderr. */
async function runIn(dirs: Dir[], cmd: string, args: string[]): Promise<void> {
  const child = spawnIn(dirs, cmd, args);
  child.stdin.end();
  let stderr = '';
  child.stdout.resume();
  child.stderr.on('data', (c) => (stderr = (stderr + c).slice(-2000)));
  const [code, signal] = await closed(child, cmd);
  if (code !== 0) throw new Error(`${cmd} failed (${signal ?? `exit ${code}`}): ${stderr.trim()}`);
}

/** Removes `<base>/<name>` (a trusted base, a name below it) and everything under it; nothing when absent. */
export async function removeTree(base: string, name: string): Promise<void> {
  let dir: Dir;
  try {
    dir = await Dir.open(base);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  try {
    await dir.remove(name);
  } finally {
    await dir.close();
  }
}

/**
 * Copies everything under `from` into `to` (`tar -c` from one descriptor piped into `tar -x` in the other),
 * keeping paths, modes, numeric owners, times and symlinks as they are (none is followed).
 */
export async function copyTree(from: Dir, to: Dir): Promise<void> {
  const reader = spawnIn([from], 'tar', ['--numeric-owner', '-cf', '-', '.']);
  const writer = spawnIn([to], 'tar', ['--numeric-owner', '-xf', '-']);
  reader.stdin.end();
  reader.stdout.pipe(writer.stdin);
  writer.stdin.on('error', () => undefined); // EPIPE: told by the exit code
  const ended = (child: ChildProcessWithoutNullStreams, what: string) => {
    let stderr = '';
    child.stderr.on('data', (c) => (stderr = (stderr + c).slice(-2000)));
    return closed(child, what).then(([code, signal]) => {
      if (code !== 0) throw new Error(`${what} failed (${signal ?? `exit ${code}`}): ${stderr.trim()}`);
    });
  };
  writer.stdout.resume();
  await Promise.all([ended(reader, 'tar -c'), ended(writer, 'tar -x')]);
}
