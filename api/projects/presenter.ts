import type { Project } from '../../db/models/project';
import { displayUrl } from '../../core/ls-remote';
import { iso } from '../../core/time';

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
