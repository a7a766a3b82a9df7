#!/usr/bin/env node
/**
 * Decrypts a snapshot downloaded from the console (POST /environments/{id}/backups/{snapshot}/download)
 * with the environment's backup key (POST /environments/{id}/backup-key), using nothing but Node:
 *
 *   node scripts/decrypt-backup.mjs --key <base64 key> --in snapshot.vcb --out restored/
 *
 * writes restored/database.dump (pg_dump custom format: `pg_restore --list restored/database.dump`) and
 * restored/files.tar (the volume files). The format is described in host/snapshot-format.ts
 * and docs/data.md. The key may also come from the VC_BACKUP_KEY environment variable.
 */
import { createReadStream, createWriteStream, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { decryptSnapshot, SnapshotError } from './snapshot-decrypt.mjs';

const { values } = parseArgs({ options: { key: { type: 'string' }, in: { type: 'string' }, out: { type: 'string' } } });
const keyText = values.key ?? process.env.VC_BACKUP_KEY;
if (!keyText || !values.in || !values.out) {
  console.error('usage: node scripts/decrypt-backup.mjs --key <base64 key> --in snapshot.vcb --out <directory>');
  process.exit(2);
}
const NAMES = { database: 'database.dump', files: 'files.tar' };

mkdirSync(values.out, { recursive: true });
try {
  await decryptSnapshot(Buffer.from(keyText, 'base64'), createReadStream(values.in), (part) =>
    createWriteStream(join(values.out, NAMES[part])),
  );
} catch (err) {
  if (!(err instanceof SnapshotError)) throw err;
  for (const name of Object.values(NAMES)) rmSync(join(values.out, name), { force: true });
  console.error(`decrypt-backup: ${err.message}`);
  process.exit(1);
}
console.log(`decrypted into ${values.out}: ${Object.values(NAMES).join(', ')}`);
