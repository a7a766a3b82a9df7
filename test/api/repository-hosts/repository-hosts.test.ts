import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import { useTestContext } from '../../helpers/context';
import { createAccessToken, createProject, createTeam, createUser, sessionAgent } from '../../helpers/fixtures';
import { taskLog, waitForTask } from '../../helpers/deploy-fixtures';
import { startGitHttpServer, type GitHttpServer } from '../../helpers/git-http-server';
import { ensureSshd, startSshd, type SshServer } from '../../helpers/sshd';

const t = useTestContext({ worker: true, edge: false });

function sh(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, encoding: 'utf8', env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1' } }).trim();
}

/** A real git repository (branch main) whose service.yaml builds and has no web process. */
function gitRepository(dir: string): string {
  mkdirSync(dir, { recursive: true });
  sh(dir, 'init', '-q', '-b', 'main');
  writeFileSync(join(dir, 'service.yaml'), 'build: ["echo built"]\n');
  sh(dir, 'add', '-A');
  sh(dir, '-c', 'user.email=t@example.test', '-c', 'user.name=T', 'commit', '-q', '-m', 'first');
  return dir;
}

function commit(dir: string, message: string) {
  sh(dir, '-c', 'user.email=t@example.test', '-c', 'user.name=T', 'commit', '-q', '--allow-empty', '-m', message);
}

async function ownerWorld() {
  const owner = await createUser(t);
  const team = await createTeam(t, owner);
  const project = await createProject(t, team);
  const agent = await sessionAgent(t, owner);
  const api = t.agent().withBearer(await createAccessToken(t, owner, team));
  return { owner, team, project, agent, api };
}

const hostRows = (teamId: string) => t.deps.knex('repository_hosts').where({ team_id: teamId });

/** The text of every regular file under `dir`. */
function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...filesUnder(p));
    else out.push(readFileSync(p, 'latin1'));
  }
  return out;
}

async function deploy(api: ReturnType<typeof t.agent>, envId: string) {
  const res = await api.post(`/environments/${envId}/deploy`);
  expect(res.status, res.text).toBe(202);
  const task = await waitForTask(t, api, res.body.id, { timeoutMs: 90_000 });
  return { task, log: await taskLog(t, api, res.body.id) };
}

afterAll(() => {
  t.deps.config.outboundAllowedHosts = [];
});

describe('GET /teams/{id}/repository-hosts/new', () => {
  it('names the kinds and their fields', async () => {
    const { agent, team } = await ownerWorld();
    const res = await agent.get(`/teams/${team.id}/repository-hosts/new`);
    expect(res.status).toBe(200);
    const fields = Object.fromEntries(
      res.body.kinds.map((k: { kind: string; fields: { name: string }[] }) => [k.kind, k.fields.map((f) => f.name)]),
    );
    expect(fields).toEqual({ https: ['host', 'username', 'token'], ssh: ['host'] });
  });
});

describe('POST /teams/{id}/repository-hosts: bad input', () => {
  it('answers 422 naming the field, and stores nothing', async () => {
    const { agent, team } = await ownerWorld();
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ kind: 'gitlab', host: 'git.example.com' }, 'kind'],
      [{ kind: 'https', host: 'git.example.com/org/repo', username: 'ci', token: 'x' }, 'host'],
      [{ kind: 'https', host: 'https://git.example.com', username: 'ci', token: 'x' }, 'host'],
      [{ kind: 'https', host: 'git.example.com', username: 'ci' }, 'token'],
      [{ kind: 'https', host: 'git.example.com', token: 'x' }, 'username'],
      [{ kind: 'ssh', host: 'git.example.com:2222' }, 'host'],
      [{ kind: 'ssh', host: 'git@git.example.com' }, 'host'],
      [{ kind: 'ssh', host: 'git.example.com', token: 'x' }, 'token'],
    ];
    for (const [body, field] of cases) {
      const res = await agent.post(`/teams/${team.id}/repository-hosts`, body);
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(Object.keys(res.body.error.fields), JSON.stringify(body)).toContain(field);
    }
    expect(await hostRows(team.id)).toHaveLength(0);
    expect(await t.deps.knex('activity_events').where({ team_id: team.id, type: 'repository_host_added' })).toEqual([]);
  });

  it('refuses a second host of the same kind and name (422 on host), keeping the first', async () => {
    const { agent, team } = await ownerWorld();
    const body = { kind: 'https', host: 'Git.Example.com', username: 'ci', token: 'tok-1' };
    expect((await agent.post(`/teams/${team.id}/repository-hosts`, body)).status).toBe(201);
    const again = await agent.post(`/teams/${team.id}/repository-hosts`, { ...body, token: 'tok-2' });
    expect(again.status).toBe(422);
    expect(again.body.error.fields.host).toMatch(/already/);
    const rows = await hostRows(team.id);
    expect(rows.map((r) => r.host)).toEqual(['git.example.com']);
  });

  it("does not delete another team's host (404)", async () => {
    const a = await ownerWorld();
    const b = await ownerWorld();
    const created = await a.agent.post(`/teams/${a.team.id}/repository-hosts`, {
      kind: 'ssh',
      host: 'git.example.com',
    });
    expect(created.status).toBe(201);
    expect((await b.agent.delete(`/repository-hosts/${created.body.id}`)).status).toBe(404);
    expect(await hostRows(a.team.id)).toHaveLength(1);
  });
});

describe('an https repository host', () => {
  let served: GitHttpServer;
  let repoDir: string;
  const token = `tok-${randomBytes(12).toString('hex')}`;

  beforeAll(async () => {
    const root = mkdtempSync(join(inject('runDir'), 'hosts-'));
    repoDir = gitRepository(join(root, 'app.git'));
    served = await startGitHttpServer(root, { user: 'deploy', password: token });
    t.deps.config.outboundAllowedHosts = ['127.0.0.1'];
  });
  afterAll(() => served?.stop());

  it("clones and deploys the team's private repository with the host's token, which appears nowhere", async () => {
    const { agent, api, team, project } = await ownerWorld();
    const url = served.url('app.git');

    const refused = await agent.post(`/projects/${project.id}/repository`, { url });
    expect(refused.status).toBe(422);
    expect(refused.body.error.fields.url).toMatch(/authentication failed/);

    const created = await agent.post(`/teams/${team.id}/repository-hosts`, {
      kind: 'https',
      host: `127.0.0.1:${served.port}`,
      username: 'deploy',
      token,
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ kind: 'https', host: `127.0.0.1:${served.port}`, username: 'deploy' });
    expect(created.text).not.toContain(token);
    const row = (await hostRows(team.id))[0];
    expect(row.sealed_secret).toMatch(/^v1\./);
    expect(row.sealed_secret).not.toContain(token);

    const connected = await agent.post(`/projects/${project.id}/repository`, { url });
    expect(connected.status, connected.text).toBe(200);
    const env = await agent.post(`/projects/${project.id}/environments`, { name: 'production', git_ref: 'main' });
    expect(env.status, env.text).toBe(201);
    const first = await deploy(api, env.body.id);
    expect(first.task.status, first.log).toBe('succeeded');
    expect(served.requests.some((r) => r.user === 'deploy' && r.password === token)).toBe(true);

    const listed = await agent.get(`/teams/${team.id}/repository-hosts`);
    expect(listed.body.data.map((h: { id: string }) => h.id)).toEqual([created.body.id]);
    const activity = await t.deps.knex('activity_events').where({ team_id: team.id }).select('type', 'summary');
    expect(activity.map((a) => a.type)).toContain('repository_host_added');
    const dump = execFileSync('pg_dump', ['--data-only', t.databaseUrl], { encoding: 'utf8', maxBuffer: 256 << 20 });
    for (const text of [dump, listed.text, first.log, ...filesUnder(join(t.dataDir, 'git-mirrors'))]) {
      expect(text).not.toContain(token);
    }

    // Once the host is deleted, the next deploy of a new commit fails clearly, telling nothing secret.
    expect((await agent.delete(`/repository-hosts/${created.body.id}`)).status).toBe(204);
    expect(await hostRows(team.id)).toHaveLength(0);
    expect(
      (await t.deps.knex('activity_events').where({ team_id: team.id, type: 'repository_host_removed' })).length,
    ).toBe(1);
    commit(repoDir, 'second');
    const second = await deploy(api, env.body.id);
    expect(second.task.status).toBe('failed');
    expect(second.log).toMatch(/authentication failed/);
    expect(second.log).not.toContain(token);
    expect(second.log).not.toMatch(/fatal:|remote:/);
  });

  it("a project's own credentials win over the team's host", async () => {
    const { agent, team, project } = await ownerWorld();
    await agent.post(`/teams/${team.id}/repository-hosts`, {
      kind: 'https',
      host: `127.0.0.1:${served.port}`,
      username: 'deploy',
      token,
    });
    const wrong = `http://deploy:not-the-token@127.0.0.1:${served.port}/app.git`;
    const res = await agent.post(`/projects/${project.id}/repository`, { url: wrong });
    expect(res.status).toBe(422);
    expect(res.body.error.fields.url).toMatch(/authentication failed/);
  });
});

describe('an ssh repository host', () => {
  let sshd: SshServer | null = null;
  let repoDir: string;
  const available = ensureSshd();

  beforeAll(async () => {
    if (!('path' in available)) throw new Error(`no sshd for the ssh repository host test: ${available.reason}`);
    sshd = await startSshd();
    repoDir = gitRepository(join(mkdtempSync(join(inject('runDir'), 'ssh-hosts-')), 'app'));
    t.deps.config.outboundAllowedHosts = ['127.0.0.1'];
  });
  afterAll(() => sshd?.stop());

  it('answers a public key; with it on the host the repository clones and deploys, without it it does not', async () => {
    const { agent, api, team, project } = await ownerWorld();
    const url = `ssh://${sshd!.user}@127.0.0.1:${sshd!.port}${repoDir}`;

    const created = await agent.post(`/teams/${team.id}/repository-hosts`, { kind: 'ssh', host: '127.0.0.1' });
    expect(created.status).toBe(201);
    expect(created.body.public_key).toMatch(/^ssh-ed25519 AAAAC3NzaC1lZDI1NTE5\S+ /);
    expect(created.text).not.toMatch(/PRIVATE KEY/);
    const row = (await hostRows(team.id))[0];
    expect(row.sealed_secret).toMatch(/^v1\./);

    // The key is not on the host yet: refused, saying only that authentication failed.
    const early = await agent.post(`/projects/${project.id}/repository`, { url });
    expect(early.status).toBe(422);
    expect(early.body.error.fields.url).toMatch(/authentication failed/);

    sshd!.authorize([created.body.public_key]);
    const connected = await agent.post(`/projects/${project.id}/repository`, { url });
    expect(connected.status, connected.text).toBe(200);
    const env = await agent.post(`/projects/${project.id}/environments`, { name: 'production', git_ref: 'main' });
    expect(env.status, env.text).toBe(201);
    const first = await deploy(api, env.body.id);
    expect(first.task.status, first.log).toBe('succeeded');
    expect(sshd!.log()).toMatch(/Accepted publickey/);
    expect(first.log).not.toMatch(/PRIVATE KEY/);
    // The key file lived only for the git call.
    expect(readdirSync(tmpdir()).filter((n) => n.startsWith('vc-ssh-'))).toEqual([]);

    expect((await agent.delete(`/repository-hosts/${created.body.id}`)).status).toBe(204);
    commit(repoDir, 'second');
    const second = await deploy(api, env.body.id);
    expect(second.task.status).toBe('failed');
    expect(second.log).toMatch(/authentication failed/);
  });
});
