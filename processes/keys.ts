/**
 * `npm run keys -- status|rotate [--token]|reseal|retire <id>` (docs/encryption-keys.md): the rotation of the
 * encryption key and of the token key, run on the control plane's machine with its settings (DATABASE_URL, else the
 * embedded server under DATA_DIR; the keys from ENCRYPTION_KEY and TOKEN_HMAC_KEY, else DATA_DIR/secrets).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig } from '../system/config';
import { sealedKeyId } from '../system/crypto';
import { retireKeyFile, rotateKeyFile, type Secrets } from '../system/secrets';
import { resealColumn, SEALED_COLUMNS, sealedValuesByKey } from '../db/queries/sealed-values';
import { workingTokensByKey } from '../db/queries/access-tokens';
import { hostKeyIds } from '../db/queries/hosts';
import { controlPlaneSecrets, operatorProgram, runCommand, withKnex } from './operator-command';

const config = loadConfig();
const fromEnv = Boolean(config.encryptionKey);
const tokenFromEnv = Boolean(config.tokenHmacKey);
const say = (line: string) => console.log(line);

const keys = () => controlPlaneSecrets(config);

/** The key id the services server's WAL archive passphrase (DATA_DIR/secrets) is sealed under, if there is one. */
function passphraseKeyId(): string | null {
  const file = join(config.dataDir, 'secrets', 'pitr-passphrase.sealed');
  return existsSync(file) ? sealedKeyId(readFileSync(file, 'utf8').trim()) : null;
}

const program = operatorProgram(
  'keys',
  "The encryption key of what is kept encrypted at rest, and the key of the tokens' digests (docs/encryption-keys.md)",
);

program
  .command('status')
  .description('The current and previous keys, the key each host runs with, and the sealed values under each key')
  .action(async () => {
    const secrets = keys();
    const current = secrets.encryptionKey.id;
    const previous = [...secrets.previousEncryptionKeys.keys()];
    say(`Encryption key: ${current} (${fromEnv ? 'ENCRYPTION_KEY' : `${config.dataDir}/secrets`})`);
    say(`Previous encryption keys: ${previous.length ? previous.join(', ') : 'none'}`);
    const { hosts, values, tokens } = await withKnex(config, async (knex) => ({
      hosts: await hostKeyIds(knex, config.hostLostSeconds),
      values: await sealedValuesByKey(knex),
      tokens: await workingTokensByKey(knex),
    }));
    for (const h of hosts)
      say(`Host ${h.name} runs with key ${h.keyId ?? 'unknown (started before keys were recorded)'}`);
    const byKey = new Map<string, number>();
    for (const v of values) byKey.set(v.keyId, (byKey.get(v.keyId) ?? 0) + v.values);
    for (const v of values) if (v.keyId !== current) say(`  ${v.table}.${v.column}: ${v.values} under ${v.keyId}`);
    const passphrase = passphraseKeyId();
    if (passphrase) byKey.set(passphrase, (byKey.get(passphrase) ?? 0) + 1);
    say(`Sealed values: ${[...byKey].map(([id, n]) => `${n} under ${id}`).join(', ') || 'none'}`);
    const old = [...byKey.keys()].filter((id) => id !== current);
    if (old.length) say('Run `npm run keys -- reseal` once every process runs with the current key.');
    else if (previous.length)
      say(`Nothing is sealed under a previous key: \`npm run keys -- retire ${previous[0]}\` forgets it.`);
    const tokenKey = secrets.tokenKey.id;
    const tokenPrevious = [...secrets.previousTokenKeys.keys()];
    say(`Token key: ${tokenKey} (${tokenFromEnv ? 'TOKEN_HMAC_KEY' : `${config.dataDir}/secrets`})`);
    say(`Previous token keys: ${tokenPrevious.length ? tokenPrevious.join(', ') : 'none'}`);
    say(`Working tokens: ${tokens.map((t) => `${t.tokens} under ${t.keyId}`).join(', ') || 'none'}`);
    for (const t of tokens.filter((t) => t.keyId !== tokenKey))
      say(
        `  ${t.tokens} under ${t.keyId} take the current key at their next use` +
          (t.lastExpiry ? `; the last expires ${t.lastExpiry.toISOString().slice(0, 10)}` : ''),
      );
  });

program
  .command('rotate')
  .description('Make a new key; the current one still works for what it made until it is retired')
  .option('--token', 'the token key (TOKEN_HMAC_KEY) instead of the encryption key')
  .action((o: { token?: boolean }) => {
    keys(); // both keys exist here: this is the control plane's DATA_DIR
    if (o.token) {
      if (tokenFromEnv)
        throw new Error(
          'The token key comes from TOKEN_HMAC_KEY: rotate it there. Set the new key in TOKEN_HMAC_KEY with a ' +
            'TOKEN_HMAC_KEY_ID of its own, move the old `id:key` into TOKEN_HMAC_KEYS_PREVIOUS, and restart the API ' +
            '(docs/encryption-keys.md).',
        );
      const { id, previous } = rotateKeyFile(config.dataDir, 'token');
      say(
        `New token key ${id}; ${previous} is set aside: tokens under it still work, and take the new key at their next use.`,
      );
      say('Next: restart npm start. `npm run keys -- status` counts the tokens still under the old key.');
      return;
    }
    if (fromEnv)
      throw new Error(
        'The key comes from ENCRYPTION_KEY: rotate it there. Set the new key in ENCRYPTION_KEY with an ENCRYPTION_KEY_ID ' +
          'of its own, move the old `id:key` into ENCRYPTION_KEYS_PREVIOUS, restart every process, then run ' +
          '`npm run keys -- reseal` (docs/encryption-keys.md).',
      );
    const { id, previous } = rotateKeyFile(config.dataDir, 'encryption');
    say(`New key ${id}; ${previous} is set aside and still opens what it sealed.`);
    say('Next: restart npm start, and each other host with the settings `npm run hosts -- join NAME` prints now');
    say('(its ENCRYPTION_KEY and ENCRYPTION_KEYS_PREVIOUS); then `npm run keys -- reseal`.');
  });

program
  .command('reseal')
  .description('Seal every value under a previous key again under the current key')
  .option('--batch <n>', 'rows read and written at a time', '200')
  .action(async (o: { batch: string }) => {
    const secrets: Secrets = keys();
    const current = secrets.encryptionKey.id;
    const batch = Number(o.batch);
    if (!Number.isInteger(batch) || batch < 1) throw new Error('--batch must be a whole number of rows, 1 or more');
    const unopened = await withKnex(config, async (knex) => {
      // a value sealed under a key a running process does not hold would stop opening there
      const behind = (await hostKeyIds(knex, config.hostLostSeconds)).filter((h) => h.keyId !== current);
      if (behind.length)
        throw new Error(
          `Not resealed: ${behind.map((h) => `host ${h.name} runs with key ${h.keyId ?? 'unknown'}`).join(', ')}, not ${current}. ` +
            'Restart it with the current key (npm run hosts -- join NAME prints the settings), then run this again.',
        );
      let left = 0;
      for (const c of SEALED_COLUMNS) {
        const r = await resealColumn(knex, secrets, c, {
          batch,
          // progress on a terminal, rewritten in place; the outcome line below replaces it
          onBatch: (done) => process.stdout.isTTY && process.stdout.write(`  ${c.table}.${c.column}: ${done} read\r`),
        });
        if (r.resealed + r.changed + r.unopened === 0) continue;
        say(
          `  ${c.table}.${c.column}: ${r.resealed} resealed` +
            (r.changed ? `, ${r.changed} written meanwhile by the console (already current)` : '') +
            (r.unopened ? `, ${r.unopened} no key opens (${r.unopenedRows.join(', ')})` : ''),
        );
        left += r.unopened;
      }
      return left;
    });
    // the WAL archive's passphrase is sealed again by whoever reads it next with the current key (host/pitr.ts)
    const passphrase = passphraseKeyId();
    if (passphrase && passphrase !== current) {
      const { pitrPassphrase } = await import('../host/pitr');
      pitrPassphrase(config.dataDir, secrets);
      say(`  ${config.dataDir}/secrets/pitr-passphrase.sealed: resealed`);
    }
    if (unopened)
      throw new Error(
        `${unopened} values are sealed under a key this process does not hold: add that key to the previous keys ` +
          '(ENCRYPTION_KEYS_PREVIOUS) and run this again, or replace those values.',
      );
    say(`Every sealed value is under ${current}.`);
  });

program
  .command('retire <id>')
  .description('Forget a previous key once nothing depends on it')
  .action(async (id: string) => {
    const secrets = keys();
    // looked up by kind: a DATA_DIR from before key ids had a random part may hold an encryption key and a token
    // key under one id, so an id can be a previous key of one kind and the current key of the other (loadSecrets
    // keeps each kind's current id out of its previous keys)
    const token = secrets.previousTokenKeys.has(id);
    const encryption = secrets.previousEncryptionKeys.has(id);
    if (!token && !encryption) {
      if (id === secrets.encryptionKey.id || id === secrets.tokenKey.id)
        throw new Error(`${id} is a current key: rotate first.`);
      throw new Error(`No previous key is named ${id} (npm run keys -- status).`);
    }
    if (token) await retireTokenKey(id);
    if (encryption) await retireEncryptionKey(id);
  });

/** A previous encryption key is forgotten once nothing is sealed under it and no host runs with it. */
async function retireEncryptionKey(id: string): Promise<void> {
  const { values, hosts } = await withKnex(config, async (knex) => ({
    values: (await sealedValuesByKey(knex)).filter((v) => v.keyId === id),
    hosts: (await hostKeyIds(knex, config.hostLostSeconds)).filter((h) => h.keyId === id),
  }));
  const count = values.reduce((n, v) => n + v.values, 0) + (passphraseKeyId() === id ? 1 : 0);
  if (count || hosts.length)
    throw new Error(
      `Not retired: ${[
        count ? `${count} values are still sealed under ${id}` : '',
        hosts.length ? `${hosts.map((h) => `host ${h.name}`).join(', ')} still runs with it` : '',
      ]
        .filter(Boolean)
        .join(', and ')}. Restart what runs with it, run \`npm run keys -- reseal\`, then this again.`,
    );
  if (fromEnv) {
    say(`Nothing is sealed under ${id}: remove it from ENCRYPTION_KEYS_PREVIOUS on every host, and restart them.`);
    return;
  }
  retireKeyFile(config.dataDir, 'encryption', id);
  say(`Key ${id} is forgotten. Hosts started with ENCRYPTION_KEYS_PREVIOUS may drop it from there too.`);
}

/** A previous token key is forgotten once no working token is under it: the rest would stop working. */
async function retireTokenKey(id: string): Promise<void> {
  const left = (await withKnex(config, workingTokensByKey)).find((t) => t.keyId === id);
  if (left)
    throw new Error(
      `Not retired: ${left.tokens} working tokens are still under ${id}; each takes the current key at its next use` +
        (left.lastExpiry ? `, and the last expires ${left.lastExpiry.toISOString().slice(0, 10)}` : '') +
        '. Retire it once none is left (npm run keys -- status), or revoke those tokens.',
    );
  if (tokenFromEnv) {
    say(`No working token is under ${id}: remove it from TOKEN_HMAC_KEYS_PREVIOUS, and restart the API.`);
    return;
  }
  retireKeyFile(config.dataDir, 'token', id);
  say(`Token key ${id} is forgotten.`);
}

await runCommand(program);
