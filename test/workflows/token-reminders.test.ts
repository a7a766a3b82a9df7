import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ScheduleOverlapPolicy, type WorkflowHandle } from '@temporalio/client';
import { useTestContext } from '../helpers/context';
import { createAccessToken, createTeam, createUser } from '../helpers/fixtures';
import { AccessToken } from '../../db/models/access-token';
import { Membership } from '../../db/models/membership';
import { formatUtc } from '../../system/mail/layout';
import { ensureReminderSchedule } from '../../core/schedules';
import { SCHEDULE_TOKEN_EXPIRY_REMINDERS } from '../../db/workflow-names';
import type { SendTokenExpiryRemindersResult } from '../../workflows/token-reminders';
import { until } from '../helpers/until';

const t = useTestContext({ worker: true, edge: false, smtp: true });

const DAY = 86_400_000;

// The schedule id is fixed and the namespace shared by every test file: only this file creates it.
afterAll(async () => {
  await t.deps?.temporal.schedule
    .getHandle(SCHEDULE_TOKEN_EXPIRY_REMINDERS)
    .delete()
    .catch(() => undefined);
});

/** A user in a team of their own with one token of `days` days; returns the token string and row. */
async function issuedToken(opts: { days?: number; purpose?: string; team?: string } = {}) {
  const user = await createUser(t, { name: 'Ada Lovelace' });
  const team = await createTeam(t, user, opts.team ?? `Team ${randomUUID().slice(0, 8)}`);
  const secret = await createAccessToken(t, user, team, opts.days ?? 30, opts.purpose ?? 'GitHub Actions deploy');
  const token = await AccessToken.query(t.deps.knex).findOne({ user_id: user.id }).throwIfNotFound();
  return { user, team, secret, token };
}

/** Moves a token's expiry to noon UTC of its day, so calendar-day arithmetic in a test is exact. */
async function expireAtNoon(token: AccessToken): Promise<Date> {
  const at = token.expires_at;
  const noon = new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate(), 12));
  await AccessToken.query(t.deps.knex).patch({ expires_at: noon }).findById(token.id);
  return noon;
}

/** Runs the reminders workflow once on this file's worker, as the schedule would, at `asOf`. */
function runReminders(asOf?: Date): Promise<SendTokenExpiryRemindersResult> {
  return t.deps.temporal.workflow.execute('sendTokenExpiryReminders', {
    taskQueue: t.config.taskQueue,
    workflowId: `token-expiry-reminders-test-${randomUUID()}`,
    args: [asOf ? { asOf: asOf.toISOString() } : {}],
  });
}

const mailTo = (email: string) => t.smtp!.messages.filter((m) => m.to.includes(email));

describe('token-expiry reminders (workflow sendTokenExpiryReminders)', () => {
  it('reminds the issuer of a token that expires within 14 days', async () => {
    const { user, token } = await issuedToken({ days: 30 });
    // 13 days and 23 hours before expiry: inside the reminder window.
    await runReminders(new Date(token.expires_at.getTime() - 14 * DAY + 3600_000));
    expect(mailTo(user.email)).toHaveLength(1);
  });

  it('names purpose, team, expiry and days left, links the token page, and never contains the token', async () => {
    const { user, team, secret, token } = await issuedToken({ days: 7, purpose: 'Nightly CI', team: 'Acme Web' });
    const asOf = new Date(token.expires_at.getTime() - 7 * DAY);
    await runReminders(asOf);
    const [mail] = mailTo(user.email);
    expect(mail).toBeDefined();
    const { date } = formatUtc(token.expires_at);
    expect(mail.subject).toContain('Nightly CI');
    expect(mail.text).toContain('Nightly CI');
    expect(mail.text).toContain(team.name);
    expect(mail.text).toContain(date);
    expect(mail.text).toContain('expires in 7 days');
    expect(mail.text).toContain(`${t.baseUrl}/account/tokens`);
    expect(mail.raw).not.toContain(secret);
    expect(mail.raw).not.toContain(secret.slice(4)); // nor its random part, in any encoding of the line
    expect(mail.text).not.toContain('vcp_');
  });

  it('does not remind a token that expires in 20 days', async () => {
    const { user, token } = await issuedToken({ days: 30 });
    await AccessToken.query(t.deps.knex)
      .patch({ expires_at: new Date(Date.now() + 20 * DAY) })
      .findById(token.id);
    const result = await runReminders();
    expect(mailTo(user.email)).toHaveLength(0);
    expect(result.failed).toBe(0);
  });

  it('does not remind a revoked token', async () => {
    const { user, token } = await issuedToken({ days: 7 });
    await AccessToken.query(t.deps.knex).patch({ revoked_at: new Date() }).findById(token.id);
    await runReminders();
    expect(mailTo(user.email)).toHaveLength(0);
  });

  it('does not remind an expired token', async () => {
    const { user, token } = await issuedToken({ days: 7 });
    await AccessToken.query(t.deps.knex)
      .patch({ expires_at: new Date(Date.now() - 3600_000) })
      .findById(token.id);
    await runReminders();
    expect(mailTo(user.email)).toHaveLength(0);
  });

  it('does not remind a token whose issuer has left its team', async () => {
    const { user, team } = await issuedToken({ days: 7 });
    await Membership.query(t.deps.knex).delete().where({ user_id: user.id, team_id: team.id });
    await runReminders();
    expect(mailTo(user.email)).toHaveLength(0);
  });

  it('reminds a 7-day token on the first run after its issue, and not again within the week', async () => {
    const { user } = await issuedToken({ days: 7 });
    const first = new Date();
    await runReminders(first);
    expect(mailTo(user.email)).toHaveLength(1);
    await runReminders(new Date(first.getTime() + 3 * DAY));
    await runReminders(new Date(first.getTime() + 6 * DAY));
    expect(mailTo(user.email)).toHaveLength(1);
  });

  it('reminds a 30-day token from 14 days before expiry, then weekly, and not once expired', async () => {
    const { user, token } = await issuedToken({ days: 30 });
    const expiresAt = await expireAtNoon(token);
    const opens = new Date(expiresAt.getTime() - 14 * DAY + 60_000);
    await runReminders(new Date(opens.getTime() - 2 * DAY)); // 16 days left: not yet
    expect(mailTo(user.email)).toHaveLength(0);
    await runReminders(opens);
    expect(mailTo(user.email)).toHaveLength(1);
    await runReminders(new Date(opens.getTime() + 3 * DAY));
    expect(mailTo(user.email)).toHaveLength(1);
    await runReminders(new Date(opens.getTime() + 7 * DAY));
    expect(mailTo(user.email)).toHaveLength(2);
    expect(mailTo(user.email)[1].text).toContain('expires in 7 days');
    await runReminders(new Date(opens.getTime() + 10 * DAY));
    await runReminders(new Date(opens.getTime() + 14 * DAY)); // expired by then
    expect(mailTo(user.email)).toHaveLength(2);
  });

  it('keeps the weekly rhythm when a run starts a little earlier than the last one', async () => {
    const { user, token } = await issuedToken({ days: 30 });
    const opens = new Date((await expireAtNoon(token)).getTime() - 13 * DAY);
    await runReminders(opens);
    await runReminders(new Date(opens.getTime() + 7 * DAY - 60_000));
    expect(mailTo(user.email)).toHaveLength(2);
  });

  it('sends once when the same run is repeated and when runs overlap', async () => {
    const { user } = await issuedToken({ days: 7 });
    const asOf = new Date();
    await Promise.all([runReminders(asOf), runReminders(asOf), runReminders(asOf)]);
    await runReminders(asOf);
    expect(mailTo(user.email)).toHaveLength(1);
    const rows = await t.deps
      .knex('token_reminders')
      .join('access_tokens', 'access_tokens.id', 'token_reminders.token_id')
      .where('access_tokens.user_id', user.id);
    expect(rows).toHaveLength(1);
    expect(rows[0].sent_at).not.toBeNull();
  });

  it('retries through a mail outage and delivers exactly once', async () => {
    const { user } = await issuedToken({ days: 7 });
    t.smtp!.setDown(true);
    try {
      const handle = await t.deps.temporal.workflow.start('sendTokenExpiryReminders', {
        taskQueue: t.config.taskQueue,
        workflowId: `token-expiry-reminders-test-${randomUUID()}`,
        args: [{}],
      });
      // Wait until the send has failed at least once and is waiting for its next attempt.
      await until('a failed send attempt', async () => {
        const { raw } = await handle.describe();
        const pending = raw.pendingActivities?.find((a) => a.activityType?.name === 'sendTokenReminder');
        return pending && (pending.attempt ?? 0) >= 2 ? pending : undefined;
      });
      const [claim] = await t.deps
        .knex('token_reminders')
        .join('access_tokens', 'access_tokens.id', 'token_reminders.token_id')
        .where('access_tokens.user_id', user.id)
        .select('sent_at');
      expect(claim).toEqual({ sent_at: null }); // claimed, not sent
      expect(mailTo(user.email)).toHaveLength(0);
      t.smtp!.setDown(false);
      const result = (await handle.result()) as SendTokenExpiryRemindersResult;
      expect(result.failed).toBe(0);
    } finally {
      t.smtp!.setDown(false);
    }
    expect(mailTo(user.email)).toHaveLength(1);
    await runReminders();
    expect(mailTo(user.email)).toHaveLength(1);
  });
});

describe('sendTokenExpiryReminders over more tokens than one page', () => {
  it('continues as new with the cursor until every due token is reminded, once each, totals carried', async () => {
    const issued = await Promise.all(Array.from({ length: 5 }, () => issuedToken({ days: 7 })));
    const asOf = new Date(Math.max(...issued.map((i) => i.token.expires_at.getTime())) - 7 * DAY + 60_000);
    const workflowId = `token-expiry-reminders-test-${randomUUID()}`;
    const handle = await t.deps.temporal.workflow.start('sendTokenExpiryReminders', {
      taskQueue: t.config.taskQueue,
      workflowId,
      args: [{ asOf: asOf.toISOString(), pageSize: 2 }],
    });
    const result: SendTokenExpiryRemindersResult = await handle.result();

    for (const { user } of issued) expect(mailTo(user.email), user.email).toHaveLength(1);
    // Totals of every run, not only the last page's.
    expect(result.due).toBeGreaterThanOrEqual(5);
    expect(result.sent).toBeGreaterThanOrEqual(5);
    expect(result.failed).toBe(0);

    // Each full page of 2 ended its run with continue-as-new, carrying the page size on.
    let runId: string | undefined = handle.firstExecutionRunId;
    let runs = 0;
    for (;;) {
      runs += 1;
      const history: Awaited<ReturnType<WorkflowHandle['fetchHistory']>> = await t.deps.temporal.workflow
        .getHandle(workflowId, runId)
        .fetchHistory();
      const last = history.events!.at(-1)!;
      const next = last.workflowExecutionContinuedAsNewEventAttributes;
      if (!next) break;
      expect(next.input?.payloads?.length).toBe(1);
      runId = next.newExecutionRunId!;
    }
    expect(runs).toBe(Math.floor(result.due / 2) + 1);
  });

  it('refuses a page size out of range', async () => {
    await expect(
      t.deps.temporal.workflow.execute('sendTokenExpiryReminders', {
        taskQueue: t.config.taskQueue,
        workflowId: `token-expiry-reminders-test-${randomUUID()}`,
        args: [{ pageSize: 0 }],
      }),
    ).rejects.toThrow();
  });
});

describe('schedule token-expiry-reminders', () => {
  let created: Awaited<ReturnType<typeof ensureReminderSchedule>>;
  beforeAll(async () => {
    created = await ensureReminderSchedule(t.deps.temporal, {
      taskQueue: t.config.taskQueue,
      hourUtc: 9,
      namespace: t.config.temporalNamespace,
    });
  });

  it('is created daily at the configured hour (UTC), skipping overlaps, catching up within a day', async () => {
    expect(created).toEqual({ scheduleId: 'token-expiry-reminders', created: true });
    const description = await t.deps.temporal.schedule.getHandle('token-expiry-reminders').describe();
    expect(description.spec.calendars).toEqual([
      expect.objectContaining({ hour: [{ start: 9, end: 9, step: 1 }], minute: [{ start: 0, end: 0, step: 1 }] }),
    ]);
    expect(description.policies.overlap).toBe(ScheduleOverlapPolicy.SKIP);
    expect(description.policies.catchupWindow).toBe(DAY);
    expect(description.action).toMatchObject({
      type: 'startWorkflow',
      workflowType: 'sendTokenExpiryReminders',
      workflowId: 'token-expiry-reminders',
      taskQueue: t.config.taskQueue,
    });
    expect(description.info.nextActionTimes[0].getUTCHours()).toBe(9);
  });

  it('is brought up to the current settings when ensured again, keeping an operator pause', async () => {
    const handle = t.deps.temporal.schedule.getHandle('token-expiry-reminders');
    await handle.pause('paused by an operator');
    const again = await ensureReminderSchedule(t.deps.temporal, {
      taskQueue: t.config.taskQueue,
      hourUtc: 6,
      namespace: t.config.temporalNamespace,
    });
    expect(again.created).toBe(false);
    const description = await handle.describe();
    expect(description.spec.calendars?.[0].hour).toEqual([{ start: 6, end: 6, step: 1 }]);
    expect(description.state.paused).toBe(true);
    await handle.unpause();
    await ensureReminderSchedule(t.deps.temporal, { taskQueue: t.config.taskQueue, hourUtc: 9 });
  });

  it('sends what is due when triggered, and never the same reminder twice', async () => {
    const { user, secret } = await issuedToken({ days: 7, purpose: 'Release pipeline' });
    const handle = t.deps.temporal.schedule.getHandle('token-expiry-reminders');
    /** Triggers the schedule and waits for the run it started to finish; returns that run's id. */
    const triggerAndFinish = async () => {
      const before = new Set((await handle.describe()).info.recentActions.map((a) => a.action.workflow.workflowId));
      await handle.trigger();
      const action = await until('the triggered run', async () =>
        (await handle.describe()).info.recentActions.find((a) => !before.has(a.action.workflow.workflowId)),
      );
      const { workflowId, firstExecutionRunId } = action.action.workflow;
      await t.deps.temporal.workflow.getHandle(workflowId, firstExecutionRunId).result();
      return workflowId;
    };

    const first = await triggerAndFinish();
    expect(first).toMatch(/^token-expiry-reminders-/);
    const mail = await t.smtp!.waitFor((m) => m.to.includes(user.email));
    expect(mail.subject).toContain('Release pipeline');
    expect(mail.raw).not.toContain(secret);

    // Run ids carry the second they were taken: the next trigger must fall in a later second.
    await until('the next second', async () =>
      new Date().toISOString().slice(0, 19) + 'Z' > first.slice(-20) ? true : undefined,
    );
    const second = await triggerAndFinish();
    expect(second).not.toBe(first);
    expect(mailTo(user.email)).toHaveLength(1);
  });
});
