#!/usr/bin/env node
// Prints the passphrase of the services server's WAL archive (PITR_REPOSITORY), for the operator to keep
// somewhere safe off this host: without it the archive cannot be read. Run where npm start runs, with the same
// DATA_DIR (and ENCRYPTION_KEY, if set): `node --import tsx scripts/pitr-passphrase.mjs`.
import { loadConfig } from '../system/config.ts';
import { secretsFor } from '../system/secrets.ts';
import { pitrPassphrase } from '../host/pitr.ts';

const config = loadConfig();
const secrets = secretsFor(config);
process.stdout.write(`${pitrPassphrase(config.dataDir, secrets)}\n`);
