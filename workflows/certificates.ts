/**
 * issueCertificate (`configuration`/`certificate_issue` and `certificate_renew`): up to `attempts` attempts
 * at the ACME CA, waiting `retrySeconds` after the first failure and twice as long after each next one (CAs
 * rate-limit failed validations). The certificate stays `pending` meanwhile (or `issued`, when a renewal's
 * certificate is still served) and is `failed` after the last, with the reason; the sweep tries it again a
 * day later.
 *
 * renewCertificates: the renewal schedule's run (certificate-renewals): starts the tasks of due certificates.
 */
import { proxyActivities, sleep } from '@temporalio/workflow';
import type { CertificateActivities } from '../activities/certificates';
import { failure, runTask, type TaskWorkflowInput } from './task-runner';
import { profiles } from './profiles';

const acts = proxyActivities<CertificateActivities>(profiles.remote);

interface IssueCertificateInput extends TaskWorkflowInput<'certificate_issue' | 'certificate_renew'> {
  /** Attempts before the certificate is failed (5). */
  attempts: number;
  /** The first wait between two attempts, in seconds (doubling). */
  retrySeconds: number;
}

export async function issueCertificate(input: IssueCertificateInput) {
  return runTask(input, async ({ params, start, log }) => {
    await start();
    const taskId = input.task.id;
    const domainId = params.domain_id;
    await acts.beginCertificate({ taskId, domainId });
    let wait = input.retrySeconds;
    let reason = '';
    for (let attempt = 1; attempt <= input.attempts; attempt++) {
      const r = await acts.attemptCertificate({ taskId, domainId, attempt, attempts: input.attempts });
      if (r.outcome === 'issued') return { hostname: params.hostname, issuer: r.issuer, expires_at: r.expires_at };
      if (r.outcome === 'gone') failure(r.reason);
      reason = r.reason;
      if (attempt < input.attempts) {
        await log(`==> Trying again in ${wait} s`);
        await sleep(wait * 1000);
        wait *= 2;
      }
    }
    return failure(`no certificate after ${input.attempts} attempts: ${reason}`);
  });
}

export async function renewCertificates(): Promise<{ started: number }> {
  return acts.sweepCertificates();
}
