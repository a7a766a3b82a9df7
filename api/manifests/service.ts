/**
 * Manifest checks (`service.yaml`, CONTRACT "The manifest"): a pasted text, or the file at the head of an
 * environment's git ref. Every fault is named in `fields` under its key path in the manifest
 * (`colour`, `build.1`, `health`; `manifest` for the document as a whole), each with its line.
 */
import type { Deps } from '../../system/deps';
import { Project } from '../../db/models/project';
import { ensureMirror, fetchMirror, git, GitError, type GitOptions } from '../../activities/provider/git';
import { MANIFEST_FILE, parseManifest, type Manifest } from '../../activities/provider/manifest';
import { gitCacheDir } from '../../activities/provider/releases';
import type { Actor } from '../lib/actor';
import { appError } from '../lib/errors';
import { authorize } from '../lib/policy';
import { findEnvironment } from '../environments/service';
import { GIT_READ_TIMEOUT_MS, headCommit } from '../pipeline/service';

type Source = { git_ref: string; commit_sha: string; present: boolean };

function check(text: string, source?: Source): { valid: true; manifest: Manifest; source?: Source } {
  const result = parseManifest(text);
  if (!result.ok) {
    throw appError('invalid', 'The manifest is not valid: `fields` names each fault with its line', { fields: result.fields, extra: source ? { source } : undefined });
  }
  return { valid: true, manifest: result.manifest, ...(source ? { source } : {}) };
}

/** POST /validate: any signed-in caller; a token needs its team role's `validate` permission. */
export async function validateManifest(deps: Deps, actor: Actor, input: { manifest: string }) {
  if (actor.kind === 'token') await authorize(deps.knex, actor, actor.token.team_id, 'validate', 'team');
  return check(input.manifest);
}

/** The text of service.yaml in commit `sha` (null when the commit has none), read through the mirror. */
async function manifestAt(repoUrl: string, sha: string, opts: GitOptions): Promise<string | null> {
  const mirror = await ensureMirror(repoUrl, opts);
  const has = await git(['--git-dir', mirror, 'cat-file', '-e', `${sha}^{commit}`], opts).then(
    () => true,
    () => false,
  );
  if (!has) await fetchMirror(mirror, opts);
  const listed = await git(['--git-dir', mirror, 'ls-tree', sha, '--', MANIFEST_FILE], opts);
  if (!/\sblob\s/.test(listed)) return null;
  return git(['--git-dir', mirror, 'cat-file', 'blob', `${sha}:${MANIFEST_FILE}`], opts);
}

/**
 * POST /environments/{id}/validate: the body's manifest when given; otherwise service.yaml at the head of
 * the environment's git ref (a commit without one is an empty, valid manifest).
 */
export async function validateEnvironmentManifest(deps: Deps, actor: Actor, environmentId: string, input: { manifest?: string }) {
  const env = await findEnvironment(deps, actor, environmentId, 'validate');
  if (input.manifest !== undefined) return check(input.manifest);
  const project = await Project.query(deps.knex).findById(env.project_id);
  if (!project?.repository_url) {
    throw appError('no_repository', 'The project has no repository connected: send the manifest in the body, or connect a repository');
  }
  const head = await headCommit(deps, project.repository_url, env.git_ref);
  if (!head.ok) throw appError(head.code, head.message);
  let text: string | null;
  try {
    text = await manifestAt(project.repository_url, head.sha, { cacheDir: gitCacheDir(deps.config.dataDir), timeoutMs: GIT_READ_TIMEOUT_MS });
  } catch (err) {
    if (err instanceof GitError) throw appError('repository_unreachable', `The repository cannot be read right now: ${err.message}`);
    throw err;
  }
  return check(text ?? '', { git_ref: env.git_ref, commit_sha: head.sha, present: text !== null });
}
