import type { Knex } from 'knex';
import { parseRepositoryUrl } from '../../host/git-remote';
import { loadConfig } from '../../system/config';
import { loadSecrets, type Secrets } from '../../system/secrets';
import { sealCredentials } from '../queries/repository';

/**
 * Repository credentials apart from the URL, sealed (db/queries/repository.ts): existing rows whose URL
 * carries user info get the URL without it and the credentials sealed, under the console's encryption
 * key (ENCRYPTION_KEY, else the one kept under DATA_DIR, as the processes that open it later use).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('projects', (t) => {
    t.text('repository_credentials');
  });
  const rows: Array<{ id: string; repository_url: string }> = await knex('projects')
    .whereRaw("repository_url ~ '^[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*@'")
    .select('id', 'repository_url');
  let secrets: Secrets | undefined;
  for (const row of rows) {
    const parsed = parseRepositoryUrl(row.repository_url);
    // Userinfo the parser keeps in the URL (an ssh user name) is an address, not a credential.
    if (!parsed.ok) {
      // An ssh or git:// URL with a password, refused today: keep the address, drop the password.
      await knex('projects')
        .where({ id: row.id })
        .update({ repository_url: row.repository_url.replace(/^([a-z][a-z0-9+.-]*:\/\/[^:/?#@]*):[^/?#@]*@/i, '$1@') });
      continue;
    }
    if (!parsed.credentials && parsed.url === row.repository_url) continue;
    if (parsed.credentials) {
      const config = loadConfig(process.env);
      secrets ??= loadSecrets(config.dataDir, {
        tokenHmacKey: config.tokenHmacKey,
        encryptionKey: config.encryptionKey,
      });
    }
    await knex('projects')
      .where({ id: row.id })
      .update({
        repository_url: parsed.url,
        repository_credentials: parsed.credentials ? sealCredentials(secrets!, row.id, parsed.credentials) : null,
      });
  }
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('projects', (t) => {
    t.dropColumn('repository_credentials');
  });
}
