import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureMirror, resolveRef } from '../../../host/git';
import { prepareRemote } from '../../../host/git-remote';

let root: string;
let repo: string;
let dataDir: string;
const saved = { ...process.env };

beforeAll(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'vc-git-env-'));
  repo = path.join(root, 'repos', 'app');
  dataDir = path.join(root, 'data');
  mkdirSync(repo, { recursive: true });
  execFileSync('git', ['init', '-q', '-b', 'main', repo]);
  execFileSync(
    'git',
    ['-c', 'user.email=t@example.test', '-c', 'user.name=T', 'commit', '-q', '--allow-empty', '-m', 'one'],
    { cwd: repo },
  );
  // The host's git setup, as a worker might have it: a global config that rewrites every URL and a
  // credential helper, and git variables in the process environment. None of it may reach git.
  const home = path.join(root, 'host-home');
  mkdirSync(home);
  writeFileSync(
    path.join(home, '.gitconfig'),
    '[url "file:///nonexistent/"]\n\tinsteadOf = /\n[credential]\n\thelper = store\n',
  );
  process.env.HOME = home;
  // A mirror cloned before credentials were kept apart: its config holds them.
  const legacy = path.join(dataDir, 'git-mirrors', 'legacy.git');
  mkdirSync(legacy, { recursive: true });
  writeFileSync(path.join(legacy, 'config'), '[remote "origin"]\n\turl = https://ci:s3cret@git.example.com/app.git\n');
  process.env.GIT_DIR = path.join(root, 'nowhere');
  process.env.GIT_CONFIG_PARAMETERS = "'url.file:///nonexistent/.insteadof'='/'";
});

afterAll(async () => {
  process.env = saved;
  await rm(root, { recursive: true, force: true });
});

describe('git runs in an environment of its own', () => {
  it("ignores the host's config, HOME and git variables, and keeps its own empty HOME and known-hosts file under DATA_DIR", async () => {
    const access = { dataDir, localRepositoryRoots: [path.join(root, 'repos')], outboundAllowedHosts: [] };
    const head = execFileSync('git', ['rev-parse', 'HEAD'], {
      cwd: repo,
      encoding: 'utf8',
      env: { PATH: process.env.PATH },
    }).trim();
    expect(await resolveRef({ url: repo }, 'main', { access })).toBe(head);
    const mirror = await ensureMirror({ url: repo, scope: 'p1' }, { access });
    expect(readFileSync(path.join(mirror, 'config'), 'utf8')).not.toContain('nonexistent');
    expect(readdirSync(path.join(dataDir, 'git-mirrors'))).not.toContain('legacy.git');
    expect(readdirSync(path.join(dataDir, 'git', 'home'))).toEqual([]);
    expect(statSync(path.join(dataDir, 'git', 'known_hosts')).isFile()).toBe(true);
    expect(statSync(path.join(dataDir, 'git', 'askpass')).mode & 0o777).toBe(0o700);
  });
});

describe('prepareRemote', () => {
  it('pins git to the addresses the guard checked (no second DNS answer between check and connect)', async () => {
    const access = { dataDir, localRepositoryRoots: [], outboundAllowedHosts: ['localhost'] };
    const http = await prepareRemote({ url: 'http://localhost:8080/app.git' }, access);
    expect(http.config).toEqual([
      '-c',
      expect.stringMatching(/^http\.curloptResolve=localhost:8080:(\[::1\]|127\.0\.0\.1)/),
    ]);
    const ssh = await prepareRemote({ url: 'git@localhost:app.git' }, access);
    expect(ssh.sshOptions).toEqual([
      '-o',
      expect.stringMatching(/^HostName=(::1|127\.0\.0\.1)$/),
      '-o',
      'HostKeyAlias=localhost',
    ]);
    const daemon = await prepareRemote({ url: 'git://localhost/app.git' }, access);
    expect(daemon.target).toMatch(/^git:\/\/(\[::1\]|127\.0\.0\.1)\/app\.git$/);
    await expect(
      prepareRemote({ url: 'git@localhost:app.git' }, { ...access, outboundAllowedHosts: [] }),
    ).rejects.toThrow(/internal address/);
  });
});
