/**
 * The few git calls the API makes itself (checking a repository, listing its branches), through the
 * provider's one git runner (location checked and pinned, clean environment, no prompts, a timeout,
 * fixed failure messages instead of git's text).
 */
import { displayUrl, GitError, lsRemoteRefs, type GitAccess, type GitRepo } from '../host/git';

export { displayUrl };

const GIT_TIMEOUT_MS = 20_000;

type LsRemote =
  | { ok: true; refs: Array<{ sha: string; ref: string }>; head?: string }
  | { ok: false; code: GitError['code']; reason: string; fieldReason: string };

/** `git ls-remote --symref`: every ref of the repository, and the branch HEAD points to. */
export async function lsRemote(repo: GitRepo, access: GitAccess, timeoutMs = GIT_TIMEOUT_MS): Promise<LsRemote> {
  try {
    return { ok: true, ...(await lsRemoteRefs(repo, { access, timeoutMs })) };
  } catch (err) {
    if (!(err instanceof GitError)) throw err;
    return { ok: false, code: err.code, reason: err.message, fieldReason: err.fieldReason };
  }
}

export function branchesOf(refs: Array<{ ref: string }>): string[] {
  return refs
    .filter((r) => r.ref.startsWith('refs/heads/'))
    .map((r) => r.ref.slice('refs/heads/'.length))
    .sort();
}

/** True when `gitRef` names a branch, a tag or a full ref of the repository, or looks like a commit id. */
export function refExists(refs: Array<{ ref: string }>, gitRef: string): boolean {
  if (/^[0-9a-f]{7,64}$/i.test(gitRef)) return true;
  return refs.some((r) => r.ref === gitRef || r.ref === `refs/heads/${gitRef}` || r.ref === `refs/tags/${gitRef}`);
}
