/**
 * Manifest checks (`service.yaml`, CONTRACT "The manifest"): a pasted text, or the file at the head of an
 * environment's git ref. Every fault is named in `fields` under its key path in the manifest
 * (`colour`, `build.1`, `health`; `manifest` for the document as a whole), each with its line.
 */
import type { Deps } from '../../system/deps';
import { Project } from '../../db/models/project';
import { git, GitError, mirrorWithCommit, treeEntryKind, type GitOptions, type GitRepo } from '../../host/git';
import { MANIFEST_FILE, manifestFileFault, parseManifest, type Manifest } from '../../host/manifest';
import { projectRepositoryOf } from '../../core/repository';
import type { Actor } from '../../core/actor';
import { appError } from '../../core/errors';
import { authorize } from '../lib/policy';
import { findEnvironment } from '../environments/service';
import { GIT_READ_TIMEOUT_MS, headCommit } from '../pipeline/service';

type Source = { git_ref: string; commit_sha: string; present: boolean };

function check(text: string, source?: Source): { valid: true; manifest: Manifest; source?: Source } {
  const result = parseManifest(text);
  if (!result.ok) {
    throw appError('invalid', 'The manifest is not valid: `fields` names each fault with its line', {
      fields: result.fields,
      extra: source ? { source } : undefined,
    });
  }
  return { valid: true, manifest: result.manifest, ...(source ? { source } : {}) };
}

/** POST /validate: any signed-in caller; a token needs its team role's `validate` permission. */
export async function validateManifest(deps: Deps, actor: Actor, input: { manifest: string }) {
  if (actor.kind === 'token') await authorize(deps.knex, actor, actor.token.team_id, 'validate', 'team');
  return check(input.manifest);
}

/**
 * service.yaml in commit `sha`, read from the commit's tree through the mirror: its text, null when the
 * commit has none, or the fault when it is not a regular file (a symlink is refused by name).
 */
async function manifestAt(
  repo: GitRepo,
  sha: string,
  opts: GitOptions,
): Promise<string | null | { fields: Record<string, string> }> {
  const mirror = await mirrorWithCommit(repo, sha, opts);
  const kind = await treeEntryKind(mirror, sha, MANIFEST_FILE, opts);
  if (kind === null) return null;
  const fault = manifestFileFault(kind === 'blob' ? 'file' : kind === 'symlink' ? 'symlink' : 'other');
  if (fault) return { fields: fault };
  return git(['--git-dir', mirror, 'cat-file', 'blob', `${sha}:${MANIFEST_FILE}`], opts);
}

/**
 * POST /environments/{id}/validate: the body's manifest when given; otherwise service.yaml at the head of
 * the environment's git ref (a commit without one is an empty, valid manifest).
 */
export async function validateEnvironmentManifest(
  deps: Deps,
  actor: Actor,
  environmentId: string,
  input: { manifest?: string },
) {
  const env = await findEnvironment(deps, actor, environmentId, 'validate');
  if (input.manifest !== undefined) return check(input.manifest);
  const project = await Project.query(deps.knex).findById(env.project_id);
  if (!project?.repository_url) {
    throw appError(
      'no_repository',
      'The project has no repository connected: send the manifest in the body, or connect a repository',
    );
  }
  const repo = (await projectRepositoryOf(deps.knex, deps.secrets, project))!;
  const head = await headCommit(deps, repo, env.git_ref);
  if (!head.ok) throw appError(head.code, head.message);
  let text: Awaited<ReturnType<typeof manifestAt>>;
  try {
    text = await manifestAt(repo, head.sha, { access: deps.config, timeoutMs: GIT_READ_TIMEOUT_MS });
  } catch (err) {
    if (err instanceof GitError)
      throw appError('repository_unreachable', `The repository cannot be read right now: ${err.message}`);
    throw err;
  }
  const source = { git_ref: env.git_ref, commit_sha: head.sha, present: text !== null };
  if (text !== null && typeof text === 'object') {
    throw appError('invalid', 'The manifest is not valid: `fields` names each fault with its line', {
      fields: text.fields,
      extra: { source },
    });
  }
  return check(text ?? '', { git_ref: env.git_ref, commit_sha: head.sha, present: text !== null });
}
