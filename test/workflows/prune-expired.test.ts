import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { useTestContext } from '../helpers/context';
import { createAccessToken, createTeam, createUser } from '../helpers/fixtures';
import { ensurePruneSchedule } from '../../core/schedules';
import { SCHEDULE_PRUNE_EXPIRED } from '../../db/workflow-names';
import { until } from '../helpers/until';

const t = useTestContext({ worker: true, edge: false });
const DAY = 86_400_000;
const ago = (ms: number) => new Date(Date.now() - ms);
const ahead = (ms: number) => new Date(Date.now() + ms);

// The schedule id is fixed and the namespace shared by every test file: only this file creates it.
afterAll(async () => {
  await t.deps?.temporal.schedule
    .getHandle(SCHEDULE_PRUNE_EXPIRED)
    .delete()
    .catch(() => undefined);
});

/** One row of every kind the prune removes, and one of every kind it must keep. */
async function seed() {
  const { knex } = t.deps;
  const user = await createUser(t);
  const session = (attrs: Record<string, unknown>) =>
    knex('sessions')
      .insert({
        secret_digest: randomUUID().replace(/-/g, '').padEnd(64, '0'),
        user_id: user.id,
        kind: 'browser',
        csrf_token: 'x',
        ...attrs,
      })
      .returning('id');
  const [[expired], [endedLongAgo], [live], [endedNow]] = await Promise.all([
    session({ expires_at: ago(1000) }),
    session({ expires_at: ahead(DAY), ended_at: ago(2 * DAY) }),
    session({ expires_at: ahead(DAY) }),
    session({ expires_at: ahead(DAY), ended_at: ago(1000) }),
  ]);
  const code = (attrs: Record<string, unknown>) =>
    knex('cli_device_codes')
      .insert({
        device_code_digest: randomUUID(),
        user_code: randomUUID().slice(0, 8).toUpperCase(),
        interval_seconds: 5,
        ...attrs,
      })
      .returning('id');
  const [[oldCode], [liveCode]] = await Promise.all([
    code({ expires_at: ago(1000) }),
    code({ expires_at: ahead(600_000) }),
  ]);
  // A sign-up never confirmed, whose code expired a day ago; and one still waiting.
  const stale = await createUser(t, { confirmed: false });
  await knex('users')
    .where({ id: stale.id })
    .update({ created_at: ago(2 * DAY) });
  await knex('email_confirmations').insert({ user_id: stale.id, code_digest: randomUUID(), expires_at: ago(DAY) });
  const waiting = await createUser(t, { confirmed: false });
  const [liveConfirmation] = await knex('email_confirmations')
    .insert({ user_id: waiting.id, code_digest: randomUUID(), expires_at: ahead(DAY) })
    .returning('id');
  const [usedConfirmation] = await knex('email_confirmations')
    .insert({ user_id: user.id, code_digest: randomUUID(), expires_at: ahead(DAY), used_at: ago(1000) })
    .returning('id');
  // Reminder rows: one long past the 7-day look-back, one recent.
  const team = await createTeam(t, user);
  await createAccessToken(t, user, team);
  const token = await knex('access_tokens').where({ user_id: user.id }).first();
  const day = (d: Date) => d.toISOString().slice(0, 10);
  await knex('token_reminders').insert([
    {
      token_id: token.id,
      reminder_key: `${token.id}:${day(ago(40 * DAY))}`,
      reminder_date: day(ago(40 * DAY)),
      sent_at: ago(40 * DAY),
    },
    {
      token_id: token.id,
      reminder_key: `${token.id}:${day(ago(2 * DAY))}`,
      reminder_date: day(ago(2 * DAY)),
      sent_at: ago(2 * DAY),
    },
  ]);
  // Idempotency-Keys: one past its 24 hours, one fresh.
  const idempotencyKey = (hoursAgo: number) =>
    knex('idempotency_keys')
      .insert({
        user_id: user.id,
        key: randomUUID(),
        request_hash: 'x',
        status: 'done',
        created_at: ago(hoursAgo * 3_600_000),
      })
      .returning('id');
  const [[oldKey], [liveKey]] = await Promise.all([idempotencyKey(25), idempotencyKey(23)]);
  return {
    user,
    oldKey,
    liveKey,
    expired,
    endedLongAgo,
    live,
    endedNow,
    oldCode,
    liveCode,
    stale,
    waiting,
    liveConfirmation,
    usedConfirmation,
    token,
  };
}

describe('the prune-expired schedule (workflow pruneExpiredRecords)', () => {
  it('is created daily at PRUNE_HOUR_UTC and, triggered, deletes what expired and keeps what is live', async () => {
    const s = await seed();
    const { knex } = t.deps;
    const ensured = await ensurePruneSchedule(t.deps.temporal, { taskQueue: t.config.taskQueue, hourUtc: 4 });
    expect(ensured).toEqual({ scheduleId: 'prune-expired', created: true });
    const handle = t.deps.temporal.schedule.getHandle(SCHEDULE_PRUNE_EXPIRED);
    const described = await handle.describe();
    expect(described.spec.calendars?.[0]).toMatchObject({
      hour: [{ start: 4, end: 4, step: 1 }],
      minute: [{ start: 30, end: 30, step: 1 }],
    });
    // A second start updates it, and keeps an operator's pause.
    await handle.pause('maintenance window');
    expect(await ensurePruneSchedule(t.deps.temporal, { taskQueue: t.config.taskQueue, hourUtc: 5 })).toEqual({
      scheduleId: 'prune-expired',
      created: false,
    });
    expect((await handle.describe()).state.paused).toBe(true);
    await handle.unpause();

    await handle.trigger();
    // The triggered run is a workflow of its own: wait for its result, whatever order it deletes in.
    await until(
      'the schedule to start the triggered run',
      async () => (await handle.describe()).info.recentActions.length > 0,
      30_000,
    );
    const [run] = (await handle.describe()).info.recentActions;
    const result = await t.deps.temporal.workflow.getHandle(run.action.workflow.workflowId).result();
    expect(result).toMatchObject({ idempotencyKeys: expect.any(Number), tokenReminders: expect.any(Number) });
    expect(result.idempotencyKeys).toBeGreaterThanOrEqual(1);
    const sessions = (await knex('sessions').where({ user_id: s.user.id })).map((r: { id: string }) => r.id).sort();
    expect(sessions).toEqual([s.live.id, s.endedNow.id].sort());
    expect(await knex('cli_device_codes').where({ id: s.liveCode.id }).first()).toBeDefined();
    expect(await knex('users').where({ id: s.stale.id }).first()).toBeUndefined();
    expect(await knex('users').where({ id: s.waiting.id }).first()).toBeDefined();
    expect(await knex('email_confirmations').where({ id: s.liveConfirmation.id }).first()).toBeDefined();
    expect(await knex('email_confirmations').where({ id: s.usedConfirmation.id }).first()).toBeUndefined();
    expect(await knex('idempotency_keys').where({ id: s.oldKey.id }).first()).toBeUndefined();
    expect(await knex('idempotency_keys').where({ id: s.liveKey.id }).first()).toBeDefined();
    const [kept] = await knex('token_reminders').where({ token_id: s.token.id });
    expect(kept.reminder_date.getTime()).toBeGreaterThan(Date.now() - 3 * DAY);
  });
});
