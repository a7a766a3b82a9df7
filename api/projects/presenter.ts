import type { Project } from '../../db/models/project';
import { displayUrl } from '../../core/ls-remote';
import { iso, isoOrNull } from '../../core/time';
import type { Config } from '../../system/config';
import type { ProjectSettingsRow } from './settings-service';
import type { RepositoryRow } from './repository-service';
import { API_PREFIX } from '../lib/paths';

const webhookUrl = (baseUrl: string, projectId: string) =>
  `${baseUrl.replace(/\/+$/, '')}${API_PREFIX}/hooks/git/${projectId}`;

/** A project; the repository URL is shown without credentials. */
export function presentProject(p: Project) {
  return {
    id: p.id,
    team_id: p.team_id,
    name: p.name,
    repository: p.repository_url ? { url: displayUrl(p.repository_url) } : null,
    created_at: iso(p.created_at),
  };
}

/** A project's settings; `domain_allowance` null is the DOMAIN_ALLOWANCE default. */
export function presentSettings(config: Pick<Config, 'domainAllowance'>, p: ProjectSettingsRow) {
  return {
    name: p.name,
    domain_allowance: p.domain_allowance ?? config.domainAllowance,
    domain_allowance_is_default: p.domain_allowance === null,
  };
}

/**
 * A project's repository, without credentials; `webhook_secret` only at connection, `reason` only when a
 * check failed.
 */
export function presentRepository(
  config: Pick<Config, 'baseUrl'>,
  p: RepositoryRow & { webhook_secret_shown?: string; reason?: string },
) {
  return {
    url: p.repository_url ? displayUrl(p.repository_url) : null,
    default_branch: p.repository_default_branch,
    reachable: p.repository_url ? p.repository_reachable : null,
    checked_at: isoOrNull(p.repository_checked_at),
    webhook_url: p.repository_url ? webhookUrl(config.baseUrl, p.id) : null,
    ...(p.webhook_secret_shown ? { webhook_secret: p.webhook_secret_shown } : {}),
    ...(p.reason ? { reason: p.reason } : {}),
  };
}
