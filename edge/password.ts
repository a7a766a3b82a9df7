/** The environment edge's Basic password, checked against its argon2id hash. */
import { createHash } from 'node:crypto';
import type http from 'node:http';
import { verifyPassword } from '../core/passwords';

/** A match is remembered (by digest) so that the hash runs once per credentials, not per request. */
export class PasswordChecks {
  private readonly good = new Map<string, string>();

  async ok(envId: string, req: http.IncomingMessage, want: { username: string; hash: string }): Promise<boolean> {
    const m = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(req.headers.authorization ?? '');
    if (!m) return false;
    const decoded = Buffer.from(m[1], 'base64').toString('utf8');
    const i = decoded.indexOf(':');
    if (i < 0 || decoded.slice(0, i) !== want.username) return false;
    const key = createHash('sha256').update(`${envId}\0${decoded}`).digest('hex');
    if (this.good.get(key) === want.hash) return true;
    if (!(await verifyPassword(want.hash, decoded.slice(i + 1)))) return false;
    if (this.good.size > 10_000) this.good.clear();
    this.good.set(key, want.hash);
    return true;
  }
}
