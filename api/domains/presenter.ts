import { VERIFY_PREFIX } from '../../core/domains';
import type { CertificateSummary } from '../../db/queries/certificates';

/** The environment's domains, and how many of its project's allowance are used. */
export function presentDomainList(l: { domains: DomainRecord[]; allowance: { used: number; limit: number } }) {
  return { data: l.domains.map(presentDomain), allowance: l.allowance };
}
import type { DomainRecord } from './service';
import { iso, isoOrNull } from '../../core/time';

const HTTPS_NOT_CONFIGURED = 'HTTPS is not configured on this console (ACME_DIRECTORY_URL is not set)';

/**
 * The domain's certificate (CONTRACT "Certificates"): `none` until one is asked for; without
 * ACME_DIRECTORY_URL none ever is, and last_error says so. Never the key.
 */
function presentCertificate(cert: CertificateSummary | undefined, httpsConfigured: boolean) {
  if (!cert) {
    return {
      status: 'none' as const,
      issuer: null,
      expires_at: null,
      last_error: httpsConfigured ? null : HTTPS_NOT_CONFIGURED,
    };
  }
  // An issued certificate past its end (its renewals failed) is served no more.
  const expired = cert.status === 'issued' && cert.expires_at !== null && cert.expires_at.getTime() <= Date.now();
  return {
    status: expired ? ('failed' as const) : cert.status,
    issuer: cert.issuer,
    expires_at: isoOrNull(cert.expires_at),
    last_error: expired ? (cert.last_error ?? 'the certificate has expired and was not renewed') : cert.last_error,
  };
}

/** `checksLeft`: POST /domains/{id}/verify calls left this hour for the hostname by the domain's team. */
export function presentDomain({ domain: d, checksLeft, cert, httpsConfigured }: DomainRecord) {
  return {
    id: d.id,
    environment_id: d.environment_id,
    hostname: d.hostname,
    status: d.status,
    verification: {
      type: 'TXT' as const,
      name: `${VERIFY_PREFIX}${d.hostname}`,
      value: d.verification_value,
      checks_left: checksLeft,
    },
    verified_at: isoOrNull(d.verified_at),
    last_checked_at: isoOrNull(d.last_checked_at),
    certificate: presentCertificate(cert, httpsConfigured),
    created_at: iso(d.created_at),
  };
}
