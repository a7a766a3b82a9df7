/**
 * A webhook's URL, kept sealed (migration 547): answers show `config.display_url` only; deliveries open
 * `sealed_url`. A row from before that rule holds its URL in the clear in `config.url`: `sealWebhookUrls`
 * seals such rows (every row, on start; one row, whenever it is read), and `openWebhookUrl` reads either.
 */
import type { Knex } from 'knex';
import { displayUrl } from '../../system/display-url';
import { open, seal } from '../../system/crypto';
import type { Secrets } from '../../system/secrets';
import { aad } from '../aad';

type Keys = Pick<Secrets, 'encryptionKey' | 'previousEncryptionKeys'>;

interface UrlRow {
  id: string;
  kind: string;
  config: Record<string, string>;
  sealed_url?: string | null;
}

/** The columns that keep a webhook URL: sealed, and its display form in `config`. */
export function webhookUrlColumns(secrets: Keys, integrationId: string, url: string, config: Record<string, string>) {
  const { url: _clear, ...rest } = config;
  return {
    sealed_url: seal(secrets, url, aad.integrationUrl(integrationId)),
    config: { ...rest, display_url: displayUrl(url) },
  };
}

/** The URL a delivery posts to (a row not sealed yet: its clear `config.url`). */
export function openWebhookUrl(secrets: Keys, row: UrlRow): string {
  if (row.sealed_url) return open(secrets, row.sealed_url, aad.integrationUrl(row.id));
  return row.config.url;
}

/** The URL as answers show it. */
export function shownWebhookUrl(row: UrlRow): string | undefined {
  return row.config.display_url ?? (row.config.url ? displayUrl(row.config.url) : undefined);
}

/** Seals the clear URLs of webhook rows (all, or the ids given); answers how many it sealed. */
export async function sealWebhookUrls(knex: Knex, secrets: Keys, ids?: string[]): Promise<number> {
  const rows = (await knex('integrations')
    .where({ kind: 'webhook' })
    .whereRaw("config \\? 'url'")
    .modify((q) => (ids ? q.whereIn('id', ids) : q))
    .select('id', 'kind', 'config')) as UrlRow[];
  let sealed = 0;
  for (const row of rows) {
    const cols = webhookUrlColumns(secrets, row.id, row.config.url, row.config);
    sealed += await knex('integrations')
      .where({ id: row.id })
      .whereRaw("config \\? 'url'")
      .update({ sealed_url: cols.sealed_url, config: JSON.stringify(cols.config) });
  }
  return sealed;
}
