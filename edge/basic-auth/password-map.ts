/**
 * The control plane's side of the password map (docs/edge-password-and-logs.md): which environments need a
 * password and the digest HAProxy compares with (`legacy` while only the argon2id hash is known), written to
 * the map file (mode 0600, write then rename) and then into the running HAProxy through the runtime API
 * (`add map` / `set map` / `del map`), with no reload. What HAProxy holds is read back (`show map`) at each
 * apply, so a restarted control plane reconciles a running HAProxy with the database.
 */
import { chmodSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Knex } from 'knex';
import { runtimeCommand } from '../runtime-command';
import { LEGACY } from './haproxy';
import { passwordDigests } from '../../db/queries/edge-settings';

/** environment id -> digest hex, or `legacy` for rows with no digest under the current key. */
export async function loadPasswordEntries(knex: Knex, keyId: string): Promise<Map<string, string>> {
  const rows = await passwordDigests(knex);
  const out = new Map<string, string>();
  for (const r of rows)
    out.set(
      r.environment_id,
      r.password_digest && r.password_digest_key_id === keyId && /^[0-9a-f]{64}$/.test(r.password_digest)
        ? r.password_digest
        : LEGACY,
    );
  return out;
}

function mapFileText(entries: Map<string, string>): string {
  return [...entries]
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([k, v]) => `${k} ${v}\n`)
    .join('');
}

/** `show map <file>` lines: `0x55d0... <key> <value>`. */
function parseShowMap(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of text.split('\n')) {
    const m = /^0x[0-9a-f]+ (\S+) (\S+)$/.exec(line.trim());
    if (m) out.set(m[1], m[2]);
  }
  return out;
}

export class PasswordMap {
  private chain: Promise<unknown> = Promise.resolve();
  private entries = new Map<string, string>();

  /** `file` is the path the configuration names in `map()`; `socket` HAProxy's admin socket. */
  constructor(
    readonly file: string,
    private readonly socket: string,
  ) {}

  /** Writes the file only (before HAProxy starts or reloads). */
  writeFile(entries: Map<string, string> = this.entries): void {
    this.entries = new Map(entries);
    mkdirSync(dirname(this.file), { recursive: true, mode: 0o700 });
    const tmp = `${this.file}.${process.pid}.tmp`;
    writeFileSync(tmp, mapFileText(this.entries), { mode: 0o600 });
    chmodSync(tmp, 0o600);
    renameSync(tmp, this.file);
  }

  /**
   * The whole set (read from the database: loadPasswordEntries): the file, then the running HAProxy, one
   * runtime call for every difference from what it holds. Calls run one at a time. Answers how many changed.
   */
  apply(entries: Map<string, string>): Promise<number> {
    return this.queue(() => this.push(entries));
  }

  /** One environment's value (the checker's new digest), on top of the last set applied. */
  set(envId: string, value: string): Promise<number> {
    return this.queue(() => this.push(new Map(this.entries).set(envId, value)));
  }

  private queue(f: () => Promise<number>): Promise<number> {
    const run = this.chain.then(f);
    this.chain = run.catch(() => undefined);
    return run;
  }

  private async push(entries: Map<string, string>): Promise<number> {
    this.writeFile(entries);
    const held = parseShowMap(await runtimeCommand(this.socket, `show map ${this.file}`));
    const commands: string[] = [];
    for (const [k, v] of this.entries) {
      const was = held.get(k);
      if (was === undefined) commands.push(`add map ${this.file} ${k} ${v}`);
      else if (was !== v) commands.push(`set map ${this.file} ${k} ${v}`);
    }
    for (const k of held.keys()) if (!this.entries.has(k)) commands.push(`del map ${this.file} ${k}`);
    for (let i = 0; i < commands.length; i += 100) {
      const answer = await runtimeCommand(this.socket, commands.slice(i, i + 100).join(';'));
      if (/unknown|not found|error|denied|failed/i.test(answer))
        throw new Error(`runtime API: ${answer.trim().slice(0, 200)}`);
    }
    return commands.length;
  }
}
