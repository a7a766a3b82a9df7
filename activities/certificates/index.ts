/**
 * Certificates (CONTRACT "Certificates"): one attempt of an issuing or renewing task, and the sweep the
 * renewal schedule runs. Every line written to the task log is plain words; keys never appear.
 */
import type { Deps } from '../../system/deps';
import { withTaskLog } from '../toolkit/task-log';
import { userFault } from '../toolkit/failures';
import { acmeReason, obtainCertificate } from './acme';
import { requestCertificate } from '../../core/certificate-tasks';
import { domainById } from '../../db/queries/domains';
import { claimCertificate, dueCertificates, recordFailedAttempt, recordIssued } from '../../db/queries/certificates';

type AttemptOutcome =
  | { outcome: 'issued'; issuer: string; expires_at: string; serial: string }
  | { outcome: 'failed'; reason: string }
  | { outcome: 'gone'; reason: string };

export function createCertificateActivities(deps: Deps) {
  const { knex } = deps;
  return {
    /** The task's first step: the certificate row is this task's (pending, unless one is already served). */
    async beginCertificate(input: { taskId: string; domainId: string }): Promise<void> {
      const domain = await domainById(knex, input.domainId, 'id', 'status');
      if (!domain) throw userFault('DomainMissing', 'the domain was deleted');
      if (domain.status !== 'verified') throw userFault('DomainNotVerified', 'the domain is not verified');
      try {
        await claimCertificate(knex, input.domainId, input.taskId);
      } catch (err) {
        if ((err as { code?: string }).code === '23503') throw userFault('DomainMissing', 'the domain was deleted');
        throw err;
      }
    },

    /**
     * One attempt: asks the CA; records the certificate, or the reason it failed (the last attempt marks a
     * never-issued certificate `failed`, to be tried again in a day).
     */
    async attemptCertificate(input: {
      taskId: string;
      domainId: string;
      attempt: number;
      attempts: number;
    }): Promise<AttemptOutcome> {
      return withTaskLog(deps, input.taskId, async (log) => {
        const domain = await domainById(knex, input.domainId, 'id', 'hostname', 'status');
        if (!domain) return { outcome: 'gone', reason: 'the domain was deleted' };
        const mine = await knex('certificates').where({ domain_id: input.domainId, task_id: input.taskId }).first();
        if (!mine) return { outcome: 'gone', reason: 'another task now looks after this certificate' };
        log.line(`==> Attempt ${input.attempt} of ${input.attempts}`);
        try {
          const issued = await obtainCertificate({
            knex,
            secrets: deps.secrets,
            acme: deps.config.acme,
            domainId: input.domainId,
            hostname: domain.hostname,
            log: (line) => log.line(line),
          });
          await recordIssued(knex, input.domainId, issued);
          log.line(`==> Issued by ${issued.issuer}, valid until ${issued.expiresAt.toISOString()}`);
          return {
            outcome: 'issued',
            issuer: issued.issuer,
            expires_at: issued.expiresAt.toISOString(),
            serial: issued.serial,
          };
        } catch (err) {
          const gone = !(await domainById(knex, input.domainId, 'id'));
          if (gone) return { outcome: 'gone', reason: 'the domain was deleted' };
          const reason = acmeReason(err, domain.hostname);
          const final = input.attempt >= input.attempts;
          await recordFailedAttempt(knex, input.domainId, {
            reason: final ? `${reason} (${input.attempts} attempts; tried again in a day)` : reason,
            attempt: input.attempt,
            final,
            retryAfterSeconds: 86_400,
          });
          log.line(`==> Attempt ${input.attempt} failed: ${reason}`);
          return { outcome: 'failed', reason };
        }
      });
    },

    /** The renewal schedule's run: starts a task for every certificate that is due. */
    async sweepCertificates(): Promise<{ started: number }> {
      if (!deps.config.acme.directoryUrl) return { started: 0 };
      let started = 0;
      for (const due of await dueCertificates(knex, deps.config.acme.renewDays)) {
        const domain = {
          id: due.domain_id,
          hostname: due.hostname,
          team_id: due.team_id,
          project_id: due.project_id,
          environment_id: due.environment_id,
        };
        const type = due.reason === 'renew' ? 'certificate_renew' : 'certificate_issue';
        const taskId = await requestCertificate(deps, domain, type, { via: 'schedule', userId: null }).catch((err) => {
          deps.logger.warn({ err: String(err), domainId: due.domain_id }, 'certificate task not started');
          return null;
        });
        if (taskId) started++;
      }
      return { started };
    },
  };
}

export type CertificateActivities = ReturnType<typeof createCertificateActivities>;
