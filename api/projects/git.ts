/**
 * The few git calls the API makes itself (checking a repository, listing its branches). Git never
 * prompts, never uses the server's credential helpers, may use only the usual transports (no `ext::`),
 * and every call has a timeout. Messages never carry credentials from the URL.
 */
import { execFile } from 'node:child_process';

export const GIT_TIMEOUT_MS = 20_000;

const SAFE_CONFIG = [
  '-c', 'protocol.allow=never',
  '-c', 'protocol.file.allow=always',
  '-c', 'protocol.git.allow=always',
  '-c', 'protocol.http.allow=always',
  '-c', 'protocol.https.allow=always',
  '-c', 'protocol.ssh.allow=always',
  '-c', 'credential.helper=',
  '-c', 'core.askPass=true',
];

function gitEnv(): NodeJS.ProcessEnv {
  return {
    ...process.env,
    LANG: 'C',
    LC_ALL: 'C',
    GIT_TERMINAL_PROMPT: '0',
    GIT_ASKPASS: 'true',
    SSH_ASKPASS: 'true',
    GIT_SSH_COMMAND: 'ssh -o BatchMode=yes -o StrictHostKeyChecking=accept-new',
  };
}

/** Removes credentials from a URL: a password always; for http(s) a lone user name too (often a token). */
export function displayUrl(url: string): string {
  const m = /^([a-z][a-z0-9+.-]*:\/\/)([^/?#]*@)(.*)$/is.exec(url);
  if (!m) return url;
  const [, scheme, userinfo, rest] = m;
  const info = userinfo.slice(0, -1);
  const colon = info.indexOf(':');
  const user = colon >= 0 ? info.slice(0, colon) : info;
  if (colon < 0 && /^https?:\/\//i.test(scheme)) return scheme + rest;
  return user ? `${scheme}${user}@${rest}` : scheme + rest;
}

/** Scrubs the URL (as given and any userinfo in any URL) from a git message. */
function scrub(text: string, url: string): string {
  let out = text.split(url).join(displayUrl(url));
  const info = /^[a-z][a-z0-9+.-]*:\/\/([^/?#]*)@/is.exec(url)?.[1];
  if (info) {
    const secrets = new Set<string>();
    for (const part of info.split(':')) {
      if (part.length < 3) continue;
      secrets.add(part);
      try {
        secrets.add(decodeURIComponent(part));
      } catch {
        // not percent-encoded
      }
    }
    const keep = displayUrl(url);
    for (const secret of secrets) if (!keep.includes(`//${secret}@`)) out = out.split(secret).join('***');
  }
  return out.replace(/[a-z][a-z0-9+.-]*:\/\/[^\s'"]+/gi, (u) => displayUrl(u));
}

export type LsRemote = { ok: true; refs: Array<{ sha: string; ref: string }>; head?: string } | { ok: false; reason: string };

/** `git ls-remote --symref -- <url>`: every ref of the repository, and the branch HEAD points to. */
export function lsRemote(url: string, timeoutMs = GIT_TIMEOUT_MS): Promise<LsRemote> {
  if (url.startsWith('-')) return Promise.resolve({ ok: false, reason: 'must not start with "-"' });
  return new Promise((resolve) => {
    execFile(
      'git',
      [...SAFE_CONFIG, 'ls-remote', '--symref', '--', url],
      { env: gitEnv(), timeout: timeoutMs, killSignal: 'SIGKILL', maxBuffer: 32 * 1024 * 1024 },
      (err, stdout, stderr) => {
        if (err) {
          const e = err as { killed?: boolean; signal?: string };
          if (e.killed || e.signal === 'SIGKILL') {
            return resolve({ ok: false, reason: `the repository did not answer within ${Math.round(timeoutMs / 1000)} seconds` });
          }
          const lines = String(stderr).split('\n').map((l) => l.replace(/^(fatal|error|remote):\s*/i, '').trim()).filter(Boolean);
          const detail = lines.slice(0, 2).join('; ') || 'git could not read it';
          return resolve({ ok: false, reason: `git ls-remote failed: ${scrub(detail, url).slice(0, 300)}` });
        }
        const refs: Array<{ sha: string; ref: string }> = [];
        let head: string | undefined;
        for (const line of String(stdout).split('\n')) {
          const sym = /^ref: refs\/heads\/(\S+)\tHEAD$/.exec(line);
          if (sym) head = sym[1];
          const m = /^([0-9a-f]{40,64})\t(\S+)$/.exec(line);
          if (m) refs.push({ sha: m[1], ref: m[2] });
        }
        resolve({ ok: true, refs, head });
      },
    );
  });
}

export function branchesOf(refs: Array<{ ref: string }>): string[] {
  return refs.filter((r) => r.ref.startsWith('refs/heads/')).map((r) => r.ref.slice('refs/heads/'.length)).sort();
}

/** True when `gitRef` names a branch, a tag or a full ref of the repository, or looks like a commit id. */
export function refExists(refs: Array<{ ref: string }>, gitRef: string): boolean {
  if (/^[0-9a-f]{7,64}$/i.test(gitRef)) return true;
  return refs.some((r) => r.ref === gitRef || r.ref === `refs/heads/${gitRef}` || r.ref === `refs/tags/${gitRef}`);
}
