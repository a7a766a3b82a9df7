/**
 * Starting a certificate's task (CONTRACT "Certificates"): `configuration`/`certificate_issue` once a domain is
 * verified (POST /domains/{id}/verify, the background re-check) and when a failed one's day has come;
 * `certificate_renew` from the renewal schedule. At most one task per certificate runs at a time; without
 * ACME_DIRECTORY_URL nothing is started. Through the one task client (core/tasks.ts).
 */
import type { Deps } from '../system/deps';
import { startTask, type TaskRequester } from './tasks';
import { certificateTaskRunning, claimCertificate } from '../db/queries/certificates';

interface CertificateDomain {
  id: string;
  hostname: string;
  team_id: string;
  project_id: string;
  environment_id: string;
}

/** Starts the task, or does nothing (null) when HTTPS is not configured or one runs already. */
export async function requestCertificate(
  deps: Deps,
  domain: CertificateDomain,
  type: 'certificate_issue' | 'certificate_renew',
  by: TaskRequester = { via: 'system', userId: null },
): Promise<string | null> {
  if (!deps.config.acme.directoryUrl) return null;
  if (await certificateTaskRunning(deps.knex, domain.id)) return null;
  const task = await startTask(deps, by, {
    type,
    teamId: domain.team_id,
    projectId: domain.project_id,
    environmentId: domain.environment_id,
    params: { domain_id: domain.id, hostname: domain.hostname },
    input: { attempts: deps.config.acme.attempts, retrySeconds: deps.config.acme.retrySeconds },
    summary: `${type === 'certificate_renew' ? 'Renew' : 'Issue'} the certificate of ${domain.hostname}`,
  });
  await claimCertificate(deps.knex, domain.id, task.id);
  return task.id;
}

/** After a verification: the domain's first certificate (a failure is logged; the daily sweep catches up). */
export async function requestFirstCertificate(deps: Deps, domainId: string): Promise<void> {
  const domain = await deps.knex('domains').where({ id: domainId, status: 'verified' }).first();
  if (!domain) return;
  await requestCertificate(deps, domain, 'certificate_issue').catch((err) =>
    deps.logger.warn({ err: String(err), domainId }, 'the certificate task could not be started; the sweep will'),
  );
}
