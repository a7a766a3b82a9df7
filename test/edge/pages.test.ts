/**
 * The edge's own pages at the console's limits (CONTRACT "The edge"): a project's maintenance page of
 * MAX_EDGE_PAGE characters showing the longest note (every character one that HTML escapes to 6 bytes), and
 * an error page of MAX_EDGE_PAGE characters, are served whole, from pages.map through Lua (edge/haproxy/pages.ts),
 * HAProxy's buffer staying 32 KiB: the error page for "no release is live" and streamed in place of HAProxy's
 * own 503.
 */
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_EDGE_PAGE, MAX_MAINTENANCE_NOTE } from '../../core/edge-pages';
import { useTestContext } from '../helpers/context';
import { createDeployWorld, createEnvironment, waitForTask } from '../helpers/deploy-fixtures';
import { spawnSystemProcess, stopChildren } from '../helpers/processes';
import { sessionAgent } from '../helpers/fixtures';
import { until as untilHolds } from '../helpers/until';

const t = useTestContext({ edge: true });
const children: ChildProcess[] = [];
let w: Awaited<ReturnType<typeof createDeployWorld>>;

beforeAll(async () => {
  w = await createDeployWorld(t);
  children.push(spawnSystemProcess(t, 'processes/worker.ts'));
}, 120_000);
afterAll(() => stopChildren(children));

/** Reads until `ok` holds: the edge serves a change a moment after it is written. */
const until = <T>(read: () => Promise<T>, ok: (v: T) => boolean): Promise<T> =>
  untilHolds('the edge to serve the change', read, ok, { timeoutMs: 15_000, intervalMs: 50 });

const get = (port: number) =>
  fetch(`http://127.0.0.1:${port}/`)
    .then(async (r) => ({ status: r.status, text: await r.text() }))
    .catch(() => ({ status: 0, text: '' }));

describe("the edge's pages at the console's limits", () => {
  it('a maintenance page and an error page of the largest size, with the longest note, are served whole', async () => {
    const owner = await sessionAgent(t, w.owner);
    const head = '<!doctype html><html><body><p>';
    const tail = '</p></body></html>';
    const fill = (n: number, c: string) => c.repeat(n);
    const maintenance = `${head}{{note}}${fill(MAX_EDGE_PAGE - head.length - tail.length - 8, 'm')}${tail}`;
    const error = `${head}${fill(MAX_EDGE_PAGE - head.length - tail.length, 'e')}${tail}`;
    expect([maintenance.length, error.length]).toEqual([MAX_EDGE_PAGE, MAX_EDGE_PAGE]);
    const saved = await owner.patch(`/projects/${w.project.id}/edge`, { pages: { maintenance, error } });
    expect(saved.status, saved.text).toBe(200);

    // the error page: an environment of the project with no release (503)
    const idle = await createEnvironment(t, w.project, { name: 'idle' });
    await t.edge!.reload();
    const failed = await until(
      () => get(idle.port),
      (r) => r.text === error,
    );
    expect(failed.status).toBe(503);
    expect(failed.text.length).toBe(error.length);
    expect(failed.text).toBe(error);
    // in place of HAProxy's own 503 (an instance that does not listen): larger than a buffer, streamed
    const dead = await createEnvironment(t, w.project, { name: 'dead' });
    const upstreams = JSON.stringify([{ id: '1', host: '127.0.0.1', port: 1 }]);
    await t.deps.knex('edge_routes').insert({ environment_id: dead.id, upstreams });
    await t.edge!.reload();
    const own = await until(
      () => get(dead.port),
      (r) => r.text === error,
    );
    expect(own.status).toBe(503);

    // the maintenance page with the longest note, escaped: 6 bytes each
    const note = '"'.repeat(MAX_MAINTENANCE_NOTE);
    const on = await owner.post(`/environments/${w.environment.id}/maintenance`, { maintenance: true, note });
    expect(on.status, on.text).toBe(202);
    expect((await waitForTask(t, w.api, on.body.id, { timeoutMs: 30_000 })).status).toBe('succeeded');
    const shown = maintenance.replace('{{note}}', '&quot;'.repeat(MAX_MAINTENANCE_NOTE));
    const res = await until(
      () => get(w.environment.port),
      (r) => r.status === 503,
    );
    expect(res.status).toBe(503);
    expect(res.text.length).toBe(shown.length);
    expect(res.text).toBe(shown);
  });
  it('a page past the served limit (MAX_SERVED_PAGE_BYTES) is refused (422 naming it); one stored before is not used: the default page is, and every other environment is served', async () => {
    const owner = await sessionAgent(t, w.owner);
    // within the console's limit in characters, but twelve longest notes take ~144 KB served
    const maintenance = `<html><body>${'<p>{{note}}</p>'.repeat(12)}</body></html>`;
    // and an error page of 90,000 characters of 3 bytes each: past MAX_SERVED_PAGE_BYTES too
    const error = `<p>${'€'.repeat(90_000)}</p>`;
    const before = await t.deps.knex('project_edges').where({ project_id: w.project.id }).first();
    const refused = await owner.patch(`/projects/${w.project.id}/edge`, { pages: { maintenance, error } });
    expect(refused.status, refused.text).toBe(422);
    expect(Object.keys(refused.body.error.fields).sort()).toEqual(['pages.error', 'pages.maintenance']);
    expect(refused.body.error.fields['pages.maintenance']).toMatch(/fewer \{\{note\}\}/);
    expect(await t.deps.knex('project_edges').where({ project_id: w.project.id }).first()).toEqual(before);

    // pages stored before the API checked their size in bytes
    await t.deps
      .knex('project_edges')
      .where({ project_id: w.project.id })
      .update({ maintenance_page: maintenance, error_page: error });
    const note = '"'.repeat(MAX_MAINTENANCE_NOTE);
    const on = await owner.post(`/environments/${w.environment.id}/maintenance`, { maintenance: true, note });
    expect(on.status, on.text).toBe(202);
    expect((await waitForTask(t, w.api, on.body.id, { timeoutMs: 30_000 })).status).toBe('succeeded');
    // the default maintenance page, with the note
    const res = await until(
      () => get(w.environment.port),
      (r) => r.status === 503 && r.text.includes('&quot;'.repeat(MAX_MAINTENANCE_NOTE)),
    );
    expect(res.text).toContain('<h1>Down for maintenance</h1>');
    expect(res.text.split('&quot;'.repeat(MAX_MAINTENANCE_NOTE)).length).toBe(2); // the note once, not twelve times
    // HAProxy took the configuration: a new environment of another team is served
    const other = await createDeployWorld(t);
    const deployed = await other.api.post(`/environments/${other.environment.id}/deploy`);
    expect(deployed.status, deployed.text).toBe(202);
    expect((await waitForTask(t, other.api, deployed.body.id, { timeoutMs: 90_000 })).status).toBe('succeeded');
    expect(
      (
        await until(
          () => get(other.environment.port),
          (r) => r.status === 200,
        )
      ).status,
    ).toBe(200);
  });
});
