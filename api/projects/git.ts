/**
 * The few git calls the API makes itself (checking a repository, listing its branches), through the
 * provider's one git runner (no prompts, no credential helpers, only the usual transports, a timeout,
 * credentials scrubbed from messages).
 */
import { displayUrl, git, GitError } from '../../activities/provider/git';

export { displayUrl };

export const GIT_TIMEOUT_MS = 20_000;

export type LsRemote = { ok: true; refs: Array<{ sha: string; ref: string }>; head?: string } | { ok: false; reason: string };

/** `git ls-remote --symref -- <url>`: every ref of the repository, and the branch HEAD points to. */
export async function lsRemote(url: string, timeoutMs = GIT_TIMEOUT_MS): Promise<LsRemote> {
  if (url.startsWith('-')) return { ok: false, reason: 'must not start with "-"' };
  let stdout: string;
  try {
    stdout = await git(['ls-remote', '--symref', '--', url], { timeoutMs });
  } catch (err) {
    if (!(err instanceof GitError)) throw err;
    if (err.code === 'timeout') return { ok: false, reason: `the repository did not answer within ${Math.round(timeoutMs / 1000)} seconds` };
    return { ok: false, reason: err.message.slice(0, 300) };
  }
  const refs: Array<{ sha: string; ref: string }> = [];
  let head: string | undefined;
  for (const line of stdout.split('\n')) {
    const sym = /^ref: refs\/heads\/(\S+)\tHEAD$/.exec(line);
    if (sym) head = sym[1];
    const m = /^([0-9a-f]{40,64})\t(\S+)$/.exec(line);
    if (m) refs.push({ sha: m[1], ref: m[2] });
  }
  return { ok: true, refs, head };
}

export function branchesOf(refs: Array<{ ref: string }>): string[] {
  return refs.filter((r) => r.ref.startsWith('refs/heads/')).map((r) => r.ref.slice('refs/heads/'.length)).sort();
}

/** True when `gitRef` names a branch, a tag or a full ref of the repository, or looks like a commit id. */
export function refExists(refs: Array<{ ref: string }>, gitRef: string): boolean {
  if (/^[0-9a-f]{7,64}$/i.test(gitRef)) return true;
  return refs.some((r) => r.ref === gitRef || r.ref === `refs/heads/${gitRef}` || r.ref === `refs/tags/${gitRef}`);
}
