import type { RepositoryHost } from '../../db/models/repository-host';

/** Never the token or the private key: https shows its user name, ssh its public key. */
export function presentRepositoryHost(h: RepositoryHost) {
  return {
    id: h.id,
    team_id: h.team_id,
    kind: h.kind,
    host: h.host,
    ...(h.kind === 'https' ? { username: h.username ?? '' } : { public_key: h.public_key ?? '' }),
    created_at: h.created_at.toISOString(),
  };
}
