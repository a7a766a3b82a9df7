/**
 * One failure rule (issue 29): an activity that meets a fault of the user's making throws a non-retryable
 * user fault (activities/toolkit/failures.ts), never an `{ok: false}` result, and the task ends `failed` with
 * that fault's words, read by the workflow from the activity's failure. Here: a certificate task for a domain
 * that is not verified (its first activity refuses it), and for one deleted before the task began. No ACME CA
 * is needed: the refusal comes before any order (ACME_DIRECTORY_URL only has to be set for a task to start).
 */
import { describe, expect, it } from 'vitest';
import { useTestContext } from '../helpers/context';
import { createEnvironment } from '../helpers/deploy-fixtures';
import { createProject, createTeam, createUser } from '../helpers/fixtures';
import { until } from '../helpers/until';
import { requestCertificate } from '../../core/certificate-tasks';

const t = useTestContext({ worker: true, edge: false, env: { ACME_DIRECTORY_URL: 'https://127.0.0.1:9/dir' } });

async function world(status: 'pending' | 'verified', hostname: string) {
  const owner = await createUser(t);
  const team = await createTeam(t, owner);
  const project = await createProject(t, team);
  const env = await createEnvironment(t, project);
  const [domain] = await t.deps
    .knex('domains')
    .insert({
      team_id: team.id,
      project_id: project.id,
      environment_id: env.id,
      hostname,
      verification_value: 'x',
      status,
    })
    .returning('*');
  return domain;
}

async function ended(taskId: string) {
  return until(
    'the task to end',
    () => t.deps.knex('tasks').where({ id: taskId }).first(),
    (row) => row && ['succeeded', 'failed', 'cancelled'].includes(row.status),
  );
}

async function logOf(taskId: string): Promise<string> {
  const chunks = await t.deps.knex('task_logs').where({ task_id: taskId }).orderBy('seq').select('chunk');
  return chunks.map((c) => c.chunk).join('');
}

describe('an activity fails with a user fault, and the task says it in the same words', { timeout: 60_000 }, () => {
  it('a domain that is not verified: failed, "the domain is not verified", no attempt at the CA', async () => {
    const domain = await world('pending', 'unverified.example.test');
    const taskId = await requestCertificate(t.deps, domain, 'certificate_issue');
    expect(taskId).toBeTruthy();
    const row = await ended(taskId!);
    expect(row).toMatchObject({ status: 'failed', error: 'the domain is not verified' });
    const log = await logOf(taskId!);
    expect(log).toContain('==> Failed: the domain is not verified');
    // the refusal is not retried: no attempt line was ever written
    expect(log).not.toMatch(/attempt/i);
  });

  it('a domain deleted before the task began: failed, "the domain was deleted"', async () => {
    const domain = await world('verified', 'deleted.example.test');
    const taskId = await requestCertificate(t.deps, domain, 'certificate_issue');
    // requestCertificate claimed the certificate row for the task; the domain goes, its row with it
    await t.deps.knex('domains').where({ id: domain.id }).delete();
    const row = await ended(taskId!);
    expect(row).toMatchObject({ status: 'failed', error: 'the domain was deleted' });
  });
});
