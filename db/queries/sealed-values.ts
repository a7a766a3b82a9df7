/**
 * Every column that holds values sealed under the console's encryption key (system/crypto.ts), with what each
 * value is bound to (db/aad.ts): what `npm run keys -- status` counts by key and `-- reseal` seals again under the
 * current key after a rotation (docs/encryption-keys.md). A new sealed column joins this list; a test walks the
 * schema for columns named `*sealed*` that are missing here.
 */
import type { Knex } from 'knex';
import { openBuffer, seal, sealedKeyId } from '../../system/crypto';
import type { Secrets } from '../../system/secrets';
import { aad } from '../aad';

type Row = Record<string, unknown>;

interface SealedColumn {
  table: string;
  column: string;
  /** The row's key, in order (the reseal walks the table by it). */
  key: string[];
  aad(row: Row): string;
}

const str = (v: unknown) => String(v);
const byId = (table: string, column: string, bind: (id: string) => string): SealedColumn => ({
  table,
  column,
  key: ['id'],
  aad: (row) => bind(str(row.id)),
});

export const SEALED_COLUMNS: SealedColumn[] = [
  byId('backup_destinations', 'secrets_sealed', aad.backupDestination),
  byId('environments', 'backup_key_sealed', aad.backupKey),
  byId('deleted_environments', 'backup_key_sealed', aad.backupKey),
  byId('integrations', 'sealed_secret', aad.integration),
  byId('integrations', 'sealed_url', aad.integrationUrl),
  byId('repository_hosts', 'sealed_secret', aad.repositoryHost),
  byId('projects', 'repository_credentials', aad.repositoryCredentials),
  byId('projects', 'webhook_secret', aad.webhookSecret),
  byId('services', 'password_sealed', aad.servicePassword),
  byId('services', 'next_password_sealed', aad.servicePassword),
  byId('idempotency_keys', 'answer_sealed', aad.idempotencyAnswer),
  {
    table: 'project_log_settings',
    column: 'url_sealed',
    key: ['project_id'],
    aad: (row) => aad.projectLogs(str(row.project_id)),
  },
  {
    table: 'project_registries',
    column: 'sealed_password',
    key: ['project_id', 'host'],
    aad: (row) => aad.registry(str(row.project_id), str(row.host)),
  },
  {
    table: 'variables',
    column: 'value_sealed',
    key: ['id'],
    aad: (row) =>
      aad.variable(
        { projectId: str(row.project_id), environmentId: row.environment_id ? str(row.environment_id) : null },
        str(row.name),
      ),
  },
  {
    table: 'certificates',
    column: 'private_key_sealed',
    key: ['domain_id'],
    aad: (row) => aad.certificateKey(str(row.domain_id)),
  },
  {
    table: 'acme_accounts',
    column: 'account_key_sealed',
    key: ['directory_url'],
    aad: (row) => aad.acmeAccount(str(row.directory_url)),
  },
];

/** How many values of each column are sealed under each key id. */
export async function sealedValuesByKey(
  knex: Knex,
): Promise<Array<{ table: string; column: string; keyId: string; values: number }>> {
  const out: Array<{ table: string; column: string; keyId: string; values: number }> = [];
  for (const c of SEALED_COLUMNS) {
    const { rows } = (await knex.raw(
      'SELECT split_part(??, ?, 2) AS key_id, count(*)::int AS n FROM ?? WHERE ?? IS NOT NULL GROUP BY 1 ORDER BY 1',
      [c.column, '.', c.table, c.column],
    )) as { rows: Array<{ key_id: string; n: number }> };
    for (const r of rows) out.push({ table: c.table, column: c.column, keyId: r.key_id, values: Number(r.n) });
  }
  return out;
}

interface ResealOutcome {
  /** Sealed again under the current key. */
  resealed: number;
  /** Changed by someone else between the read and the write (the new value is the writer's, under its key). */
  changed: number;
  /** Not opened by any key this process holds: left as they are, with the first few row keys. */
  unopened: number;
  unopenedRows: string[];
}

/**
 * Seals every value of `c` that is not under the current key again under it, `batch` rows at a time, in the
 * order of the row's key. Each write is a compare-and-set on the old value, so a value written meanwhile (by a
 * request or a task) is never overwritten. A value no key opens is left as it is and counted.
 */
export async function resealColumn(
  knex: Knex,
  secrets: Pick<Secrets, 'encryptionKey' | 'previousEncryptionKeys'>,
  c: SealedColumn,
  o: { batch?: number; onBatch?: (done: number) => void } = {},
): Promise<ResealOutcome> {
  const batch = o.batch ?? 200;
  const outcome: ResealOutcome = { resealed: 0, changed: 0, unopened: 0, unopenedRows: [] };
  const keys = c.key.map(() => '??').join(', ');
  let after: Knex.Value[] | undefined;
  for (;;) {
    const q = knex(c.table)
      .whereNotNull(c.column)
      .whereRaw('split_part(??, ?, 2) <> ?', [c.column, '.', secrets.encryptionKey.id])
      .orderBy(c.key)
      .limit(batch)
      .select('*');
    if (after) q.whereRaw(`(${keys}) > (${c.key.map(() => '?').join(', ')})`, [...c.key, ...after]);
    const rows: Row[] = await q;
    if (rows.length === 0) return outcome;
    for (const row of rows) {
      const old = str(row[c.column]);
      const where = Object.fromEntries(c.key.map((k) => [k, row[k]]));
      let plain: Buffer;
      try {
        plain = openBuffer(secrets, old, c.aad(row));
      } catch {
        outcome.unopened++;
        if (outcome.unopenedRows.length < 5)
          outcome.unopenedRows.push(`${c.key.map((k) => str(row[k])).join('/')} (key ${sealedKeyId(old)})`);
        continue;
      }
      const n = await knex(c.table)
        .where(where)
        .where(c.column, old)
        .update({ [c.column]: seal(secrets, plain, c.aad(row)) });
      if (n === 1) outcome.resealed++;
      else outcome.changed++;
    }
    after = c.key.map((k) => rows[rows.length - 1]![k] as Knex.Value);
    o.onBatch?.(outcome.resealed + outcome.changed + outcome.unopened);
  }
}
