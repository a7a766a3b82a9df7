import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { useTestContext } from '../../helpers/context';
import { createTeam, createUser, sessionAgent } from '../../helpers/fixtures';
import { freePort } from '../../helpers/ports';
import { Agent } from '../../helpers/http';

const t = useTestContext();

/** Every column of every table of the test database, cast to text, searched for each needle. */
async function findInDatabase(needles: string[]): Promise<string[]> {
  const columns = await t.deps
    .knex('information_schema.columns')
    .select('table_name', 'column_name', 'data_type')
    .where('table_schema', 'public');
  expect(columns.length).toBeGreaterThan(20);
  expect(columns.some((c: { data_type: string }) => c.data_type === 'jsonb')).toBe(true);
  const hits: string[] = [];
  for (const { table_name, column_name } of columns) {
    for (const needle of needles) {
      const row = await t.deps
        .knex(table_name)
        .whereRaw('position(? in ??::text) > 0', [needle, column_name])
        .count({ n: '*' })
        .first();
      if (Number(row?.n) > 0) hits.push(`${table_name}.${column_name}`);
    }
  }
  return hits;
}

const needlesOf = (token: string) => [token, token.slice(4), token.slice(4, -6)];

describe('personal access token secrecy', () => {
  it('the token string is nowhere in the database after it was issued and used', async () => {
    const user = await createUser(t);
    const team = await createTeam(t, user);
    const agent = await sessionAgent(t, user);
    const issued = await agent.post('/me/tokens', { purpose: 'ci', team_id: team.id, expires_in_days: 30 });
    expect(issued.status).toBe(201);
    const token: string = issued.body.token;
    const bearer = t.agent().withBearer(token);
    await bearer.get('/me');
    await bearer.get('/projects');
    await bearer.post('/me/tokens', { purpose: token, team_id: team.id, expires_in_days: 7 });
    await agent.get('/me/tokens');

    // The search does find what is stored (a control), and never the string.
    expect(await findInDatabase([issued.body.id])).toContain('access_tokens.id');
    expect(await findInDatabase(needlesOf(token))).toEqual([]);
  });
});

describe('logs', () => {
  let child: ChildProcess | undefined;
  afterAll(async () => {
    if (child && child.exitCode === null) {
      const exited = new Promise((r) => child!.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    }
  });

  it('an API process logging at trace level never writes a token string', async () => {
    const port = await freePort();
    let output = '';
    child = spawn(process.execPath, ['--import', 'tsx', 'processes/api.ts'], {
      cwd: resolve(import.meta.dirname, '../../..'),
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        PORT: String(port),
        HOST: '127.0.0.1',
        DATABASE_URL: t.databaseUrl,
        TEMPORAL_ADDRESS: inject('temporalAddress'),
        TEMPORAL_TASK_QUEUE: `test-logs-${port}`,
        DATA_DIR: t.dataDir, // the same token key as this file's API
        LOG_LEVEL: 'trace',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout!.on('data', (d) => (output += d));
    child.stderr!.on('data', (d) => (output += d));
    const deadline = Date.now() + 30_000;
    while (!output.includes('API listening')) {
      if (child.exitCode !== null || Date.now() > deadline) throw new Error(`API process did not start:\n${output}`);
      await new Promise((r) => setTimeout(r, 50));
    }

    const api = new Agent(`http://127.0.0.1:${port}/api/vc/v1`);
    const user = await createUser(t);
    const team = await createTeam(t, user);
    const session = await sessionAgent(t, user);
    const agent = api;
    agent.cookies.set('vc_session', session.cookies.get('vc_session')!);
    agent.csrf = session.csrf;
    const issued = await agent.post('/me/tokens', { purpose: 'ci', team_id: team.id, expires_in_days: 7 });
    expect(issued.status).toBe(201);
    const token: string = issued.body.token;
    const bearer = new Agent(agent.apiUrl).withBearer(token);
    expect((await bearer.get('/me/tokens')).status).toBe(403);
    await bearer.get('/me');
    await bearer.get(`/projects?token=${token}`);
    await bearer.post('/me/tokens', { purpose: token, team_id: token, expires_in_days: token });
    const mistyped = token.slice(0, -1) + (token.endsWith('a') ? 'b' : 'a');
    await new Agent(agent.apiUrl).withBearer(mistyped).get('/me');
    await agent.delete(`/me/tokens/${issued.body.id}`);
    await bearer.get('/me'); // revoked now

    const exited = new Promise((r) => child!.once('exit', r));
    child.kill('SIGTERM');
    await exited;

    expect(output).toContain('"msg":"request"'); // the capture works: request lines were written
    expect(output).toContain('access token issued');
    for (const needle of [...needlesOf(token), ...needlesOf(mistyped)]) expect(output).not.toContain(needle);
  });
});
