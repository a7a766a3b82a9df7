import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestContext } from '../helpers/context';
import { createDeployWorld, waitForTask } from '../helpers/deploy-fixtures';
import { ensureResourcePruneSchedule } from '../../core/schedules';
import { SCHEDULE_RESOURCE_SAMPLES_PRUNE } from '../../db/workflow-names';
import { resourceSeries } from '../../db/queries/resources';
import { environmentVolume } from '../../db/queries/storage';
import { until } from '../helpers/until';
import { sessionAgent, insertHost } from '../helpers/fixtures';

const t = useTestContext({ worker: true, edge: false, env: { RESOURCE_SAMPLE_SECONDS: '1' } });
let w: Awaited<ReturnType<typeof createDeployWorld>>;
const DAY = 86_400_000;

beforeAll(async () => {
  w = await createDeployWorld(t);
  const res = await w.api.post(`/environments/${w.environment.id}/deploy`);
  expect(res.status, res.text).toBe(202);
  const task = await waitForTask(t, w.api, res.body.id);
  expect(task.status, task.error ?? '').toBe('succeeded');
});

// The schedule id is fixed and the namespace shared by every test file: only this file creates it.
afterAll(async () => {
  await t.deps?.temporal.schedule
    .getHandle(SCHEDULE_RESOURCE_SAMPLES_PRUNE)
    .delete()
    .catch(() => undefined);
});

describe('the resource sampler (RESOURCE_SAMPLE_SECONDS)', () => {
  it("writes a sample of every environment each interval: its web process's memory and CPU, its directories' bytes", async () => {
    const rows = await until('two samples with a running web process', async () => {
      const r = await t.deps
        .knex('resource_samples')
        .where({ environment_id: w.environment.id })
        .where('memory_bytes', '>', 0)
        .orderBy('at');
      return r.length >= 2 ? r : undefined;
    });
    // a node web server holds well over 10 MB resident; the release directory holds the checked-out app
    expect(Number(rows.at(-1).memory_bytes)).toBeGreaterThan(10 * 1024 * 1024);
    expect(Number(rows.at(-1).disk_bytes)).toBeGreaterThan(1000);
    // the volume apart (part of the disk's bytes): empty until the app writes to it
    expect(Number(rows.at(-1).volume_bytes)).toBe(0);
    expect(rows.every((r: { cpu: number }) => r.cpu >= 0)).toBe(true);
    const seconds = rows.map((r: { at: Date }) => r.at.getTime() / 1000);
    expect(new Set(seconds).size).toBe(seconds.length);
  });

  it("counts the volume's own bytes apart once it holds a file", async () => {
    const dir = await environmentVolume(t.deps.knex, t.deps.config.storageRoots, w.environment.id);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'upload.bin'), Buffer.alloc(20_000, 1));
    const since = new Date();
    const row = await until('a sample counting the file', async () =>
      t.deps
        .knex('resource_samples')
        .where({ environment_id: w.environment.id })
        .where('at', '>', since)
        .where('volume_bytes', '>=', 20_000)
        .first(),
    );
    expect(Number(row.disk_bytes)).toBeGreaterThan(Number(row.volume_bytes));
    rmSync(join(dir, 'upload.bin'));
  });

  it("samples only the environments placed on its own host: another host's agent samples its own", async () => {
    // a second environment, placed on another host (a row heartbeating as its agent would)
    await insertHost(t, 'sampler-away');
    const owner = await sessionAgent(t, w.owner);
    const made = await owner.post(`/projects/${w.project.id}/environments`, { name: 'away', git_ref: 'main' });
    expect(made.status, made.text).toBe(201);
    await t.deps.knex('servers').where({ environment_id: made.body.id, role: 'web' }).update({ host: 'sampler-away' });
    const since = new Date();
    // two rounds of this worker's sampler after the placement: its own environment sampled, the other not
    await until('two more samples of the environment on this host', async () => {
      const r = await t.deps
        .knex('resource_samples')
        .where({ environment_id: w.environment.id })
        .where('at', '>', since);
      return r.length >= 2 ? r : undefined;
    });
    expect(await t.deps.knex('resource_samples').where({ environment_id: made.body.id })).toEqual([]);
  });
});

describe('the hourly sums (windows of days)', () => {
  it('average exactly as the minute samples do: a bin is the mean of every sample in it', async () => {
    const hour = new Date(Math.floor((Date.now() - 5 * DAY) / 3_600_000) * 3_600_000);
    const at = (min: number) => new Date(hour.getTime() + min * 60_000);
    // two statements into the same hour: the trigger adds the second batch to the first one's sums
    await t.deps.knex('resource_samples').insert([
      { environment_id: w.environment.id, at: at(1), cpu: 10, memory_bytes: 100, disk_bytes: 1000 },
      { environment_id: w.environment.id, at: at(2), cpu: 20, memory_bytes: 200, disk_bytes: 1000 },
    ]);
    await t.deps
      .knex('resource_samples')
      .insert({ environment_id: w.environment.id, at: at(3), cpu: 60, memory_bytes: 600, disk_bytes: 4000 });
    const hourly = await t.deps.knex('resource_hourly').where({ environment_id: w.environment.id, hour }).first();
    expect(hourly).toMatchObject({ samples: 3, cpu_sum: 90 });
    const week = await resourceSeries(t.deps.knex, w.environment.id, '7d');
    expect(week.step).toBe(3600);
    const i = week.series.cpu.findIndex((p) => p.at === hour.toISOString());
    expect(week.series.cpu[i].value).toBe(30);
    expect(week.series.memory[i].value).toBe(300);
    expect(week.series.disk[i].value).toBe(2000);
    // the last day from the minute samples: the samples the sampler wrote, nothing from 5 days ago
    const day = await resourceSeries(t.deps.knex, w.environment.id, '24h');
    expect(day.step).toBe(180);
    expect(day.series.cpu.length).toBeGreaterThan(0);
    expect(day.series.cpu.every((p) => new Date(p.at).getTime() > Date.now() - DAY - 180_000)).toBe(true);
  });
});

describe('the daily prune (schedule resource-samples-prune, workflow pruneResourceSamples)', () => {
  it('deletes samples older than 90 days and keeps the others', async () => {
    const at = (days: number) => new Date(Date.now() - days * DAY);
    await t.deps.knex('resource_samples').insert([
      { environment_id: w.environment.id, at: at(91), cpu: 1, memory_bytes: 1, disk_bytes: 1 },
      { environment_id: w.environment.id, at: at(120), cpu: 1, memory_bytes: 1, disk_bytes: 1 },
      { environment_id: w.environment.id, at: at(89), cpu: 1, memory_bytes: 1, disk_bytes: 1 },
    ]);
    const ensured = await ensureResourcePruneSchedule(t.deps.temporal, t.config.taskQueue);
    expect(ensured.created).toBe(true);
    const handle = t.deps.temporal.schedule.getHandle(SCHEDULE_RESOURCE_SAMPLES_PRUNE);
    const described = await handle.describe();
    expect(described.spec.calendars?.[0]).toMatchObject({ hour: [{ start: 4, end: 4, step: 1 }] });
    await handle.trigger();
    await until('the old samples to go', async () => {
      const old = await t.deps
        .knex('resource_samples')
        .where({ environment_id: w.environment.id })
        .where('at', '<', at(90))
        .count('* as n')
        .first();
      return Number(old!.n) === 0 ? true : undefined;
    });
    const kept = await t.deps
      .knex('resource_samples')
      .where({ environment_id: w.environment.id })
      .where('at', '<', at(88))
      .count('* as n')
      .first();
    expect(Number(kept!.n)).toBe(1);
    const hours = await t.deps
      .knex('resource_hourly')
      .where({ environment_id: w.environment.id })
      .where('hour', '<', at(88))
      .pluck('hour');
    expect(hours.map((h: Date) => Math.round((Date.now() - h.getTime()) / DAY))).toEqual([89]);
    // ensuring again (a worker restart) updates the same schedule
    expect((await ensureResourcePruneSchedule(t.deps.temporal, t.config.taskQueue)).created).toBe(false);
  });
});
