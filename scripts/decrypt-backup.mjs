#!/usr/bin/env node
/**
 * Decrypts a snapshot downloaded from the console (POST /environments/{id}/backups/{snapshot}/download)
 * with the environment's backup key (POST /environments/{id}/backup-key), using nothing but Node:
 *
 *   node scripts/decrypt-backup.mjs --key <base64 key> --in snapshot.vcb --out restored/
 *
 * writes restored/database.dump (pg_dump custom format: `pg_restore --list restored/database.dump`) and
 * restored/files.tar (the volume files). The format is described in activities/data/snapshot-format.ts
 * and the README. The key may also come from the VC_BACKUP_KEY environment variable.
 */
import { createDecipheriv, createHash } from 'node:crypto';
import { createReadStream, createWriteStream, mkdirSync, rmSync } from 'node:fs';
import { once } from 'node:events';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

const { values } = parseArgs({ options: { key: { type: 'string' }, in: { type: 'string' }, out: { type: 'string' } } });
const keyText = values.key ?? process.env.VC_BACKUP_KEY;
if (!keyText || !values.in || !values.out) {
  console.error('usage: node scripts/decrypt-backup.mjs --key <base64 key> --in snapshot.vcb --out <directory>');
  process.exit(2);
}
const key = Buffer.from(keyText, 'base64');
if (key.length !== 32) fail('the key must be base64 of 32 bytes');

const MAGIC = Buffer.from('VCBACKUP');
const HEADER = MAGIC.length + 1 + 16 + 8;
const NAMES = { 1: 'database.dump', 2: 'files.tar' };

function fail(message) {
  console.error(`decrypt-backup: ${message}`);
  process.exit(1);
}

mkdirSync(values.out, { recursive: true });
const outputs = {};
const output = (part) => (outputs[part] ??= createWriteStream(join(values.out, NAMES[part])));
let buffered = Buffer.alloc(0);
const input = createReadStream(values.in)[Symbol.asyncIterator]();
async function read(n) {
  while (buffered.length < n) {
    const next = await input.next();
    if (next.done) fail('the snapshot is cut short');
    buffered = Buffer.concat([buffered, next.value]);
  }
  const out = buffered.subarray(0, n);
  buffered = buffered.subarray(n);
  return out;
}

const header = await read(HEADER);
if (!header.subarray(0, 8).equals(MAGIC)) fail('not a snapshot (bad magic)');
if (header[8] !== 1) fail(`unknown format version ${header[8]}`);
const fingerprint = header.subarray(9, 25).toString('hex');
if (fingerprint !== createHash('sha256').update(key).digest().subarray(0, 16).toString('hex')) {
  fail(`the snapshot was encrypted under another key (fingerprint ${fingerprint})`);
}
const prefix = header.subarray(25, 33);
for (let index = 0; ; index++) {
  const head = await read(5);
  const part = head[0];
  const length = head.readUInt32BE(1);
  const body = await read(length + 16);
  const nonce = Buffer.alloc(12);
  prefix.copy(nonce, 0);
  nonce.writeUInt32BE(index, 8);
  const decipher = createDecipheriv('aes-256-gcm', key, nonce);
  decipher.setAAD(Buffer.concat([header, head]));
  decipher.setAuthTag(body.subarray(length));
  let plain;
  try {
    plain = Buffer.concat([decipher.update(body.subarray(0, length)), decipher.final()]);
  } catch {
    for (const part of Object.keys(NAMES)) rmSync(join(values.out, NAMES[part]), { force: true });
    fail(`frame ${index} does not authenticate: damaged file or wrong key`);
  }
  if (part === 255) break;
  if (!NAMES[part]) fail(`unknown part ${part}`);
  if (!output(part).write(plain)) await once(output(part), 'drain');
}
for (const part of Object.keys(NAMES)) output(part); // both files exist, an absent part is empty
await Promise.all(Object.values(outputs).map((s) => new Promise((r) => s.end(r))));
console.log(`decrypted into ${values.out}: ${Object.values(NAMES).join(', ')}`);
