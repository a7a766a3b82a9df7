/**
 * Database services through the real stack: the price previewed, a postgresql database created by a task,
 * the deployed app reaching it through DATABASE_URL, and its own login (never the console's role).
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestContext } from '../../helpers/context';
import { createDeployWorld, waitForTask } from '../../helpers/deploy-fixtures';
import { sessionAgent } from '../../helpers/fixtures';
import type { Agent } from '../../helpers/http';
import { commitDatabaseApp, databaseApp } from '../../helpers/database-app';
import { dropServiceDatabase } from '../../../host/pg-server';

const t = useTestContext({ worker: true });
let w: Awaited<ReturnType<typeof createDeployWorld>>;
let owner: Agent;
const env = () => `/environments/${w.environment.id}`;

async function runTask(agent: Agent, path: string, body: unknown) {
  const res = await agent.post(path, body);
  expect(res.status, res.text).toBe(202);
  const task = await waitForTask(t, owner, res.body.id, { timeoutMs: 90_000 });
  expect(task.status, task.error ?? '').toBe('succeeded');
  return task;
}

beforeAll(async () => {
  w = await createDeployWorld(t);
  commitDatabaseApp(w.repo.dir);
  owner = await sessionAgent(t, w.owner);
}, 120_000);

afterAll(async () => {
  const rows = await t.deps.knex('services').select('database_name', 'role_name');
  for (const r of rows) await dropServiceDatabase(t.config, { database: r.database_name, role: r.role_name });
});

describe('POST /environments/{id}/services', () => {
  it('previews the price, then creates a postgresql database the deployed app reaches through DATABASE_URL', async () => {
    const choices = await owner.get(`${env()}/services/choices`);
    expect(choices.body.data[0]).toMatchObject({ kind: 'postgresql', versions: ['15'] });
    const preview = await owner.post(`${env()}/services/preview`, { kind: 'postgresql', plan: 'small' });
    expect(preview.body).toMatchObject({ monthly_price_delta: 8, currency: 'EUR' });
    expect(
      (await owner.post(`${env()}/services/preview`, { kind: 'postgresql', plan: 'huge' })).body.error.fields,
    ).toHaveProperty('plan');
    const task = await runTask(owner, `${env()}/services`, { kind: 'postgresql', plan: 'small' });
    expect(task).toMatchObject({ kind: 'machines', type: 'service_create' });
    const list = await owner.get(`${env()}/services`);
    expect(list.body.data).toEqual([
      expect.objectContaining({ kind: 'postgresql', version: '15', plan: 'small', status: 'available' }),
    ]);
    expect((await owner.post(`${env()}/services`, { kind: 'postgresql', plan: 'small' })).status).toBe(409);

    await runTask(w.api, `${env()}/deploy`, {});
    expect(await databaseApp(w.environment.port, '/write?body=original')).toEqual({ status: 200, text: 'original' });
  });

  it('keeps the database to its own login: the console role is not it and the password is sealed', async () => {
    const row = await t.deps.knex('services').where({ environment_id: w.environment.id }).first();
    expect(row.password_sealed).toMatch(/^v1\./);
    const c = new pg.Client({
      connectionString: t.config
        .databaseUrl!.replace(/\/[^/]*$/, `/${row.database_name}`)
        .replace('postgres@', 'nobody@'),
    });
    await expect(c.connect()).rejects.toThrow();
  });
});
