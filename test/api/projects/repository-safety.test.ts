import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import { repositoriesDir, useTestContext } from '../../helpers/context';
import { createAccessToken, createProject, createTeam, createUser, sessionAgent } from '../../helpers/fixtures';
import { taskLog, waitForTask } from '../../helpers/deploy-fixtures';
import {
  startEmptyReplyServer,
  startGitHttpServer,
  startRedirectServer,
  type GitHttpServer,
} from '../../helpers/git-http-server';
import { freePort } from '../../helpers/ports';
import { ensureMirror } from '../../../host/git';
import { Project } from '../../../db/models/project';
import { repositoryOf } from '../../../core/repository';

const t = useTestContext({ worker: true, edge: false });
const roots = () => mkdtempSync(join(repositoriesDir(), 'safety-'));

function sh(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, encoding: 'utf8', env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1' } }).trim();
}

/** A real git repository (branch main) with a service.yaml that builds and has no web process. */
function gitRepository(
  dir: string,
  files: Record<string, string> = { 'service.yaml': 'build: ["echo built"]\n' },
): string {
  mkdirSync(dir, { recursive: true });
  sh(dir, 'init', '-q', '-b', 'main');
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  sh(dir, 'add', '-A');
  sh(dir, '-c', 'user.email=t@example.test', '-c', 'user.name=T', 'commit', '-q', '--allow-empty', '-m', 'first');
  return dir;
}

async function ownerProject() {
  const owner = await createUser(t);
  const team = await createTeam(t, owner);
  const project = await createProject(t, team);
  return { owner, team, project, agent: await sessionAgent(t, owner) };
}

/** POST /projects/{id}/repository; a refusal must leave the project without a repository. */
async function connect(url: string) {
  const { agent, project, team, owner } = await ownerProject();
  const res = await agent.post(`/projects/${project.id}/repository`, { url });
  if (res.status !== 200) {
    const row = (await Project.query(t.deps.knex).findById(project.id))!;
    expect([row.repository_url, row.repository_credentials]).toEqual([null, null]);
  }
  return { res, agent, project, team, owner };
}

function allowOutbound(...entries: string[]) {
  t.deps.config.outboundAllowedHosts = entries;
}

afterAll(() => allowOutbound());

describe('POST /projects/{id}/repository: local paths', () => {
  it('connects a repository under LOCAL_REPOSITORY_ROOTS, as a path and as file://', async () => {
    const dir = gitRepository(join(roots(), 'app'));
    expect((await connect(dir)).res.status).toBe(200);
    expect((await connect(`file://${dir}`)).res.status).toBe(200);
  });

  it("refuses a repository outside the roots (the console's own checkout, a file:// URL) with 422 on url", async () => {
    for (const url of [process.cwd(), `file://${process.cwd()}`, '/work', '/etc']) {
      const { res } = await connect(url);
      expect(res.status, url).toBe(422);
      expect(res.body.error.fields.url).toMatch(/LOCAL_REPOSITORY_ROOTS/);
    }
  });

  it('refuses a repository inside DATA_DIR, and DATA_DIR itself', async () => {
    const inside = gitRepository(join(t.dataDir, 'planted'));
    for (const url of [inside, t.dataDir, `file://${inside}`]) {
      const { res } = await connect(url);
      expect(res.status, url).toBe(422);
      expect(res.body.error.fields.url).toMatch(/data directory/);
    }
  });

  it("refuses another team's mirror, directly, through a symlink, a .git file or `..`", async () => {
    const dir = gitRepository(join(roots(), 'private'));
    const victim = await connect(dir);
    expect(victim.res.status).toBe(200);
    const mirror = await ensureMirror({ url: dir, scope: victim.project.id }, { access: t.deps.config });
    expect(mirror.startsWith(t.dataDir)).toBe(true);

    const tricks = roots();
    symlinkSync(mirror, join(tricks, 'link.git'));
    mkdirSync(join(tricks, 'gitfile'));
    writeFileSync(join(tricks, 'gitfile', '.git'), `gitdir: ${mirror}\n`);
    const outside = gitRepository(join(inject('runDir'), `outside-${randomBytes(4).toString('hex')}`));
    const dotdot = join(repositoriesDir(), '..', outside.split('/').at(-1)!);
    for (const url of [
      mirror,
      `file://${mirror}`,
      join(tricks, 'link.git'),
      join(tricks, 'gitfile'),
      dotdot,
      `${tricks}/../../${outside.split('/').at(-1)}`,
    ]) {
      const { res } = await connect(url);
      expect(res.status, url).toBe(422);
      expect(res.body.error.fields.url).toMatch(/LOCAL_REPOSITORY_ROOTS/);
    }
  });

  it('refuses every local path when LOCAL_REPOSITORY_ROOTS is unset', async () => {
    const dir = gitRepository(join(roots(), 'app'));
    const saved = t.deps.config.localRepositoryRoots;
    t.deps.config.localRepositoryRoots = [];
    try {
      const { res } = await connect(dir);
      expect(res.status).toBe(422);
      expect(res.body.error.fields.url).toMatch(/LOCAL_REPOSITORY_ROOTS is not set/);
    } finally {
      t.deps.config.localRepositoryRoots = saved;
    }
  });
});

describe('POST /projects/{id}/repository: the outbound guard', () => {
  let served: GitHttpServer;
  let serveRoot: string;
  const password = `tok-${randomBytes(12).toString('hex')}`;

  beforeAll(async () => {
    serveRoot = mkdtempSync(join(inject('runDir'), 'served-'));
    gitRepository(join(serveRoot, 'app.git'));
    served = await startGitHttpServer(serveRoot, { user: 'deploy', password });
  });
  afterAll(() => served?.stop());

  it('refuses loopback, private, link-local and IPv4-mapped addresses, and names resolving to them', async () => {
    const urls = [
      'http://127.0.0.1/app.git',
      'https://10.1.2.3/app.git',
      'http://169.254.169.254/latest/meta-data',
      'http://[::1]/app.git',
      'http://[::ffff:127.0.0.1]/app.git',
      'https://100.64.0.1/app.git',
      'http://localhost/app.git',
      `http://localhost:${served.port}/app.git`,
      'ssh://git@127.0.0.1/app.git',
      'git@localhost:app.git',
      'git://192.168.1.1/app.git',
    ];
    for (const url of urls) {
      const { res } = await connect(url);
      expect(res.status, url).toBe(422);
      expect(res.body.error.fields.url, url).toMatch(/internal address/);
    }
    expect(served.requests).toHaveLength(0);
  });

  it('reaches a loopback server once its host is listed in OUTBOUND_ALLOWED_HOSTS (by address, CIDR or name)', async () => {
    for (const [entry, host] of [
      ['127.0.0.1', '127.0.0.1'],
      ['127.0.0.0/8', '127.0.0.1'],
      ['localhost', 'localhost'],
    ]) {
      allowOutbound(entry);
      const { res } = await connect(`http://deploy:${password}@${host}:${served.port}/app.git`);
      expect(res.status, entry).toBe(200);
      expect(res.body).toMatchObject({ url: `http://${host}:${served.port}/app.git`, reachable: true });
    }
    allowOutbound();
  });

  it('does not follow a redirect from an allowed server to a loopback one', async () => {
    const redirect = await startRedirectServer(`http://127.0.0.1:${served.port}`);
    try {
      allowOutbound('localhost');
      const before = served.requests.length;
      const { res } = await connect(`http://localhost:${redirect.port}/app.git`);
      expect(res.status).toBe(422);
      expect(res.body.error.fields.url).toMatch(/redirect/);
      expect(redirect.hits).toBeGreaterThan(0);
      expect(served.requests.length).toBe(before);
    } finally {
      allowOutbound();
      await redirect.stop();
    }
  });

  it('answers a closed port and an empty reply with the same words (no port scanning)', async () => {
    const empty = await startEmptyReplyServer();
    try {
      allowOutbound('127.0.0.1');
      const closed = await connect(`http://127.0.0.1:${await freePort()}/app.git`);
      const silent = await connect(`http://127.0.0.1:${empty.port}/app.git`);
      expect(closed.res.status).toBe(422);
      expect(silent.res.status).toBe(422);
      expect(silent.res.body.error).toEqual(closed.res.body.error);
      expect(closed.res.text).not.toMatch(/refused|empty reply|curl|fatal/i);
    } finally {
      allowOutbound();
      await empty.stop();
    }
  });

  it("says authentication failed for wrong or missing credentials, and nothing of git's text", async () => {
    allowOutbound('127.0.0.1');
    try {
      for (const url of [served.url('app.git'), `http://deploy:wrong@127.0.0.1:${served.port}/app.git`]) {
        const { res } = await connect(url);
        expect(res.status).toBe(422);
        expect(res.body.error.fields.url).toMatch(/authentication failed/);
        expect(res.text).not.toMatch(/fatal|remote:|wrong/);
      }
      expect(
        (await connect(`http://deploy:${password}@127.0.0.1:${served.port}/missing.git`)).res.body.error.fields.url,
      ).toMatch(/no git repository/);
    } finally {
      allowOutbound();
    }
  });

  it('clones and deploys with credentials from the URL, which appear nowhere in clear', async () => {
    allowOutbound('127.0.0.1');
    try {
      const url = `http://deploy:${password}@127.0.0.1:${served.port}/app.git`;
      const { res, agent, project, team, owner } = await connect(url);
      expect(res.status).toBe(200);
      const env = await agent.post(`/projects/${project.id}/environments`, { name: 'production', git_ref: 'main' });
      expect(env.status).toBe(201);
      const api = t.agent().withBearer(await createAccessToken(t, owner, team));
      const deploy = await api.post(`/environments/${env.body.id}/deploy`);
      expect(deploy.status).toBe(202);
      const task = await waitForTask(t, api, deploy.body.id);
      const log = await taskLog(t, api, deploy.body.id);
      expect(task.status, log).toBe('succeeded');
      expect(served.requests.some((r) => r.password === password)).toBe(true);

      const row = (await Project.query(t.deps.knex).findById(project.id))!;
      expect(row.repository_url).toBe(served.url('app.git'));
      expect(row.repository_credentials).toMatch(/^v1\./);
      const dump = execFileSync('pg_dump', ['--data-only', t.databaseUrl], { encoding: 'utf8', maxBuffer: 256 << 20 });
      expect(dump).toContain(row.repository_credentials);
      const answers = [
        res.text,
        (await agent.get(`/projects/${project.id}/repository`)).text,
        (await agent.get('/projects')).text,
        (await agent.get(`/environments/${env.body.id}/source`)).text,
        log,
      ];
      for (const text of [dump, ...answers, ...filesUnder(join(t.dataDir, 'git-mirrors'))]) {
        expect(text).not.toContain(password);
        expect(text).not.toContain(encodeURIComponent(password));
      }
    } finally {
      allowOutbound();
    }
  });
});

/** The text of every regular file under `dir` (a mirror's config, refs, packs). */
function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...filesUnder(p));
    else out.push(readFileSync(p, 'latin1'));
  }
  return out;
}

describe('service.yaml as a symlink', () => {
  it('is refused by name in validation and in the deploy log', async () => {
    const dir = join(roots(), 'linked');
    mkdirSync(dir);
    symlinkSync('/etc/passwd', join(dir, 'service.yaml'));
    gitRepository(dir, {});
    const { agent, project, team, owner } = await connect(dir);
    const env = await agent.post(`/projects/${project.id}/environments`, { name: 'production', git_ref: 'main' });
    expect(env.status).toBe(201);
    const validated = await agent.post(`/environments/${env.body.id}/validate`, {});
    expect(validated.status).toBe(422);
    expect(validated.body.error.fields.manifest).toMatch(/service\.yaml is a symlink/);

    const api = t.agent().withBearer(await createAccessToken(t, owner, team));
    const deploy = await api.post(`/environments/${env.body.id}/deploy`);
    expect(deploy.status).toBe(202);
    const task = await waitForTask(t, api, deploy.body.id);
    expect(task.status).toBe('failed');
    const log = await taskLog(t, api, deploy.body.id);
    expect(log).toMatch(/service\.yaml is a symlink/);
    expect(log).not.toContain('root:x:0:0');
  });
});

describe('migration 110: repository credentials apart from the URL', () => {
  it('moves credentials out of existing URLs, sealed to the project, and leaves other URLs alone', async () => {
    const { knex } = t.deps;
    const { up } = await import('../../../db/migrations/110_repository_credentials');
    const { team } = await ownerProject();
    await knex.schema.alterTable('projects', (tb) => tb.dropColumn('repository_credentials'));
    const withToken = await knex('projects')
      .insert({
        team_id: team.id,
        name: 'legacy-https',
        repository_url: 'https://ci:s3cr%40t-tok@git.example.com/org/app.git',
      })
      .returning('id');
    const withSsh = await knex('projects')
      .insert({
        team_id: team.id,
        name: 'legacy-ssh',
        repository_url: 'ssh://git:hunter22@git.example.com/org/app.git',
      })
      .returning('id');
    const plain = await knex('projects')
      .insert({ team_id: team.id, name: 'legacy-plain', repository_url: '/srv/git/app' })
      .returning('id');
    const savedDataDir = process.env.DATA_DIR;
    process.env.DATA_DIR = t.dataDir;
    try {
      await up(knex);
    } finally {
      if (savedDataDir === undefined) delete process.env.DATA_DIR;
      else process.env.DATA_DIR = savedDataDir;
    }
    const rows = await knex('projects').whereIn('id', [withToken[0].id, withSsh[0].id, plain[0].id]).orderBy('name');
    const [https, plainRow, ssh] = rows;
    expect(https.repository_url).toBe('https://git.example.com/org/app.git');
    expect(repositoryOf(t.deps.secrets, https)!.credentials).toEqual({ username: 'ci', password: 's3cr@t-tok' });
    expect(ssh.repository_url).toBe('ssh://git@git.example.com/org/app.git');
    expect(ssh.repository_credentials).toBeNull();
    expect(plainRow).toMatchObject({ repository_url: '/srv/git/app', repository_credentials: null });
    // Bound to its project: the sealed value does not open for another one.
    expect(() => repositoryOf(t.deps.secrets, { ...https, id: plainRow.id })).toThrow();
    const dump = execFileSync('pg_dump', ['--data-only', t.databaseUrl], { encoding: 'utf8', maxBuffer: 256 << 20 });
    expect(dump).not.toMatch(/s3cr|hunter22/);
  });
});
