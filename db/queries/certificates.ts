/**
 * Certificates of domains (automatic HTTPS), shared by the API (what domain answers show), the issuing and
 * renewing activities, and the edge (HTTP-01 answers, the PEM files HAProxy loads). Private keys stay
 * sealed here; only the edge's certificate files (edge/certificate-files.ts) hold them in the clear.
 */
import type { Knex } from 'knex';

type CertificateStatus = 'pending' | 'issued' | 'failed';

/** What a domain answer shows of its certificate (never the key). */
export interface CertificateSummary {
  domain_id: string;
  status: CertificateStatus;
  issuer: string | null;
  expires_at: Date | null;
  last_error: string | null;
}

export async function certificateSummaries(knex: Knex, domainIds: string[]): Promise<Map<string, CertificateSummary>> {
  if (domainIds.length === 0) return new Map();
  const rows: CertificateSummary[] = await knex('certificates')
    .whereIn('domain_id', domainIds)
    .select('domain_id', 'status', 'issuer', 'expires_at', 'last_error');
  return new Map(rows.map((r) => [r.domain_id, r]));
}

/**
 * The row an issuing task works on: created pending, or brought back to pending, with the task's id. Both
 * the starter and the task's first step claim it; the second claim of one task changes nothing.
 */
export async function claimCertificate(knex: Knex, domainId: string, taskId: string): Promise<void> {
  // An issued certificate stays issued (and served) while it is renewed.
  await knex.raw(
    `INSERT INTO certificates (domain_id, status, task_id) VALUES (?, 'pending', ?)
     ON CONFLICT (domain_id) DO UPDATE SET
       status = CASE WHEN certificates.status = 'issued' AND certificates.expires_at > now() THEN 'issued'
                ELSE 'pending' END,
       task_id = EXCLUDED.task_id, attempts = 0, next_attempt_at = NULL, updated_at = now()
     WHERE certificates.task_id IS DISTINCT FROM EXCLUDED.task_id`,
    [domainId, taskId],
  );
}

/** Whether a task of this certificate (other than `taskId`) is pending or running now. */
export async function certificateTaskRunning(knex: Knex, domainId: string): Promise<boolean> {
  const row = await knex('certificates as c')
    .join('tasks as t', 't.id', 'c.task_id')
    .where('c.domain_id', domainId)
    .whereIn('t.status', ['pending', 'running'])
    .first('t.id');
  return Boolean(row);
}

export interface IssuedCertificate {
  issuer: string;
  serial: string;
  notBefore: Date;
  expiresAt: Date;
  certificatePem: string;
  privateKeySealed: string;
}

export async function recordIssued(knex: Knex, domainId: string, c: IssuedCertificate): Promise<void> {
  await knex('certificates').where({ domain_id: domainId }).update({
    status: 'issued',
    issuer: c.issuer,
    serial: c.serial,
    not_before: c.notBefore,
    expires_at: c.expiresAt,
    certificate_pem: c.certificatePem,
    private_key_sealed: c.privateKeySealed,
    attempts: 0,
    last_error: null,
    last_attempt_at: knex.fn.now(),
    next_attempt_at: null,
    issued_at: knex.fn.now(),
    updated_at: knex.fn.now(),
  });
}

/**
 * One failed attempt. The last one (`final`) makes a certificate that was never issued (or has expired)
 * `failed` and due again in a day; an issued one stays issued (it is still served until it expires), with
 * the reason.
 */
export async function recordFailedAttempt(
  knex: Knex,
  domainId: string,
  input: { reason: string; attempt: number; final: boolean; retryAfterSeconds: number },
): Promise<void> {
  await knex('certificates')
    .where({ domain_id: domainId })
    .update({
      attempts: input.attempt,
      last_error: input.reason,
      last_attempt_at: knex.fn.now(),
      ...(input.final
        ? {
            status: knex.raw("CASE WHEN status = 'issued' AND expires_at > now() THEN 'issued' ELSE 'failed' END"),
            next_attempt_at: knex.raw(`now() + make_interval(secs => ?)`, [input.retryAfterSeconds]),
          }
        : {}),
      updated_at: knex.fn.now(),
    });
}

interface DueCertificate {
  domain_id: string;
  hostname: string;
  team_id: string;
  project_id: string;
  environment_id: string;
  /** `renew`: an issued certificate near its end; `issue`: none yet, or a failed one whose day has come. */
  reason: 'renew' | 'issue';
}

/**
 * Verified domains whose certificate is due, without a task of theirs pending or running: issued ones
 * expiring within `renewDays`, failed ones whose next attempt has come, and verified domains without one.
 */
export async function dueCertificates(knex: Knex, renewDays: number, limit = 500): Promise<DueCertificate[]> {
  const rows = await knex('domains as d')
    .leftJoin('certificates as c', 'c.domain_id', 'd.id')
    .leftJoin('tasks as t', 't.id', 'c.task_id')
    .where('d.status', 'verified')
    .andWhere((q) => q.whereNull('t.id').orWhereNotIn('t.status', ['pending', 'running']))
    .andWhere((q) =>
      q
        .whereNull('c.domain_id')
        .orWhere((r) =>
          r
            .where('c.status', 'issued')
            .andWhere('c.expires_at', '<', knex.raw('now() + make_interval(days => ?)', [renewDays]))
            .andWhere((n) => n.whereNull('c.next_attempt_at').orWhere('c.next_attempt_at', '<=', knex.fn.now())),
        )
        .orWhere((r) => r.where('c.status', 'failed').andWhere('c.next_attempt_at', '<=', knex.fn.now()))
        // A pending one whose task is gone (the worker lost it): start again.
        .orWhere('c.status', 'pending'),
    )
    .orderBy('d.hostname')
    .limit(limit)
    .select('d.id as domain_id', 'd.hostname', 'd.team_id', 'd.project_id', 'd.environment_id', 'c.status');
  return rows.map((r: DueCertificate & { status: CertificateStatus | null }) => ({
    domain_id: r.domain_id,
    hostname: r.hostname,
    team_id: r.team_id,
    project_id: r.project_id,
    environment_id: r.environment_id,
    reason: r.status === 'issued' ? 'renew' : 'issue',
  }));
}

/** Challenges: one row per token; the edge answers it for its hostname only. */
export async function putChallenge(knex: Knex, c: { token: string; hostname: string; keyAuthorization: string }) {
  await knex('acme_challenges')
    .insert({ token: c.token, hostname: c.hostname, key_authorization: c.keyAuthorization })
    .onConflict('token')
    .merge();
}

export async function removeChallenge(knex: Knex, token: string): Promise<void> {
  await knex('acme_challenges').where({ token }).delete();
}

/** A served certificate as the edge writes it to HAProxy's files (edge/certificate-files.ts): the key still sealed. */
interface ServedCertificate {
  domain_id: string;
  hostname: string;
  serial: string;
  certificate_pem: string;
  private_key_sealed: string;
}

/** The certificates the edge serves: issued, unexpired, of verified domains. */
export async function servedCertificates(knex: Knex): Promise<ServedCertificate[]> {
  return knex('certificates as c')
    .join('domains as d', 'd.id', 'c.domain_id')
    .where('d.status', 'verified')
    .whereNotNull('c.certificate_pem')
    .whereNotNull('c.private_key_sealed')
    .andWhere('c.expires_at', '>', knex.fn.now())
    .select('c.domain_id', 'd.hostname', 'c.serial', 'c.certificate_pem', 'c.private_key_sealed');
}
