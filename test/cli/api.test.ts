/**
 * `service api PATH`: any call of the API from the command line, as the signed-in person or a token (no worker).
 * The client runs as its own process against the real API; what it changed is read back from PostgreSQL.
 */
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { useTestContext } from '../helpers/context';
import { createAccessToken, createProject, createTeam, createUser } from '../helpers/fixtures';
import { createEnvironment } from '../helpers/deploy-fixtures';
import { answerDroppingRelay } from '../helpers/answer-dropping-relay';
import { cliHome, runCli } from '../helpers/cli';
import { storeCliSession } from '../helpers/cli-session';
import { readStore, writeStore } from '../../cli/config';

const t = useTestContext();
vi.setConfig({ testTimeout: 120_000 });
let home: Record<string, string>;
let token: string;
let team: Awaited<ReturnType<typeof createTeam>>;
let project: Awaited<ReturnType<typeof createProject>>;
let envId: string;

beforeAll(async () => {
  const owner = await createUser(t);
  team = await createTeam(t, owner, 'Api Team');
  project = await createProject(t, team, { name: 'scripted' });
  envId = (await createEnvironment(t, project, { name: 'production' })).id;
  await createEnvironment(t, project, { name: 'staging' });
  await createEnvironment(t, project, { name: 'preview' });
  token = await createAccessToken(t, owner, team);
  home = cliHome(t);
  await storeCliSession(t, owner, home);
});

const api = (args: string[], env: Record<string, string> = {}, input?: string) =>
  runCli(t, ['api', ...args], { ...home, ...env }, input === undefined ? {} : { input });

describe('service api', () => {
  it('reads any path as the signed-in person and prints its JSON; the /api/vc/v1 prefix is optional', async () => {
    const res = await api(['/teams']);
    expect(res.code, res.stderr).toBe(0);
    expect(JSON.parse(res.stdout).data.map((x: { id: string }) => x.id)).toContain(team.id);
    const prefixed = await api([`/api/vc/v1/environments/${envId}`]);
    expect(prefixed.code, prefixed.stderr).toBe(0);
    expect(JSON.parse(prefixed.stdout)).toMatchObject({ id: envId, name: 'production' });
  });

  it('fills {env}, {project} and {team} from --env; a field makes it a POST that changes things', async () => {
    const res = await api([
      '/environments/{env}/domains',
      '--env',
      'scripted/production',
      '-f',
      'hostname=api-cli.example.test',
    ]);
    expect(res.code, res.stderr).toBe(0);
    const domain = JSON.parse(res.stdout);
    expect(domain).toMatchObject({ hostname: 'api-cli.example.test' });
    const rows = await t.deps.knex('domains').where({ environment_id: envId }).select('id', 'hostname');
    expect(rows).toEqual([{ id: domain.id, hostname: 'api-cli.example.test' }]);

    const project_ = await api(['/projects?team_id={team}', '--env', 'scripted/production']);
    expect(project_.code, project_.stderr).toBe(0);
    expect(JSON.parse(project_.stdout).data).toEqual([expect.objectContaining({ id: project.id, team_id: team.id })]);

    const removed = await api(['-X', 'DELETE', `/domains/${domain.id}`]);
    expect(removed.code, removed.stderr).toBe(0);
    expect(await t.deps.knex('domains').where({ id: domain.id })).toHaveLength(0);
  });

  it('-F types its values and nests name[key] and name[]', async () => {
    const res = await api([
      '-X',
      'PATCH',
      '/projects/{project}/edge',
      '--project',
      'scripted',
      '-F',
      'rate_limit[requests]=120',
      '-F',
      'rate_limit[per_seconds]=60',
      '-f',
      'blocked_user_agents[]=BadBot',
      '-f',
      'blocked_user_agents[]=1234',
    ]);
    expect(res.code, res.stderr).toBe(0);
    expect(JSON.parse(res.stdout)).toMatchObject({
      rate_limit: { requests: 120, per_seconds: 60 },
      blocked_user_agents: ['BadBot', '1234'],
    });
    const back = JSON.parse((await api(['/projects/{project}/edge', '--project', 'scripted'])).stdout);
    expect(back.rate_limit).toEqual({ requests: 120, per_seconds: 60 });

    const off = await api(['-X', 'PATCH', `/environments/${envId}`, '-F', 'auto_deploy=false']);
    expect(off.code, off.stderr).toBe(0);
    expect((await t.deps.knex('environments').where({ id: envId }).first('auto_deploy')).auto_deploy).toBe(false);
  });

  it('takes a JSON body from standard input', async () => {
    const res = await api(['-X', 'PATCH', `/environments/${envId}`, '--input', '-'], {}, '{"auto_deploy": true}');
    expect(res.code, res.stderr).toBe(0);
    expect((await t.deps.knex('environments').where({ id: envId }).first('auto_deploy')).auto_deploy).toBe(true);
  });

  it("a refusal exits 4 with the API's message and the field at fault, and changes nothing", async () => {
    const res = await api(['/environments/{env}/domains', '--env', 'scripted/staging', '-f', 'hostname=not a host']);
    expect(res.code).toBe(4);
    expect(res.stderr).toMatch(/^Error: /m);
    expect(res.stderr).toMatch(/^\s+hostname: /m);
    expect(res.stdout).toBe('');
    expect(await t.deps.knex('domains').whereIn('environment_id', [envId])).toHaveLength(0);

    const unknown = await api(['-X', 'GET', '/environments', '-f', 'colour=blue']);
    expect(unknown.code).toBe(4);
    expect(unknown.stderr).toContain('colour');
  });

  it('says what is missing before it calls anything', async () => {
    const noEnv = await api(['/environments/{env}/domains']);
    expect(noEnv.code).toBe(4);
    expect(noEnv.stderr).toContain('give --env project/environment');
    const other = await api(['/tasks/{task}']);
    expect(other.stderr).toContain('only {env}, {project} and {team}');
    const both = await api(
      [`/environments/${envId}`, '-X', 'PATCH', '-F', 'auto_deploy=true', '--input', '-'],
      {},
      '{}',
    );
    expect(both.stderr).toContain('not both');
    const method = await api(['-X', 'TRACE', '/teams']);
    expect(method.stderr).toContain('GET, POST, PUT, PATCH, DELETE');
    expect([noEnv, other, both, method].map((r) => r.code)).toEqual([4, 4, 4, 4]);
  });

  it('--paginate follows next_before and prints every page as one list', async () => {
    // fields make a POST unless -X says GET (as gh api does); --paginate reads
    const first = await api(['-X', 'GET', '/environments', '-f', `project_id=${project.id}`, '-F', 'limit=1']);
    expect(first.code, first.stderr).toBe(0);
    const one = JSON.parse(first.stdout);
    expect(one.data).toHaveLength(1);
    expect(one.next_before).toEqual(expect.any(String));
    const res = await api(['/environments', '--paginate', '-f', `project_id=${project.id}`, '-F', 'limit=1']);
    expect(res.code, res.stderr).toBe(0);
    const names = JSON.parse(res.stdout).data.map((e: { name: string }) => e.name);
    expect(names.sort()).toEqual(['preview', 'production', 'staging']);
  });

  it('a token reaches what a token may; the rest is refused with what to do', async () => {
    const env = await api([`/environments/${envId}`], { VC_TOKEN: token });
    expect(env.code, env.stderr).toBe(0);
    const vars = await api([`/environments/${envId}/variables`], { VC_TOKEN: token });
    expect(vars.code).toBe(4);
    expect(vars.stderr).toContain('service login');
  });

  it('a write whose answer was lost is sent again under its Idempotency-Key and changes things once', async () => {
    const staging = (await t.deps.knex('environments').where({ project_id: project.id, name: 'staging' }).first('id'))
      .id as string;
    const relay = await answerDroppingRelay(Number(new URL(t.baseUrl).port), (head) =>
      head.startsWith(`POST /api/vc/v1/environments/${staging}/domains `),
    );
    const store = readStore({ ...process.env, ...home });
    store.sessions[relay.url] = store.sessions[t.baseUrl];
    writeStore(store, { ...process.env, ...home });
    try {
      const res = await api([`/environments/${staging}/domains`, '-f', 'hostname=lost-answer.example.test'], {
        VC_API: relay.url,
      });
      expect(res.code, res.stderr).toBe(0);
      expect(res.stderr).toMatch(/trying again/);
      expect(JSON.parse(res.stdout)).toMatchObject({ hostname: 'lost-answer.example.test' });
      expect(await t.deps.knex('domains').where({ environment_id: staging })).toHaveLength(1);
      expect(relay.dropped()).toBe(true);
      expect(relay.matched()).toBe(2);
    } finally {
      relay.close();
    }
  });
});
