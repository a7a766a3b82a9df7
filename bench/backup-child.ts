/**
 * One snapshot taken by the backup engine in a process of its own (as the worker takes it), so that the bench
 * can sample this process's memory alone. Input from the environment: BENCH_CONFIG (JSON: the services admin
 * URL, the service login, the destination directory, the object key). Prints one JSON line at the end:
 * seconds, stored bytes, and this process's own peak RSS (getrusage) in bytes.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { takeSnapshot } from '../activities/data/backup-engine';
import { openStore } from '../host/destinations';
import { volumeTar } from '../host/provider/volume';

const input = JSON.parse(process.env.BENCH_CONFIG ?? '{}');
const config = { servicesDatabaseUrl: input.adminUrl as string, databaseUrl: undefined };
const store = openStore({ kind: 'local', settings: { path: input.dir } }, { outboundAllowedHosts: [] });
const began = performance.now();
const r = await takeSnapshot({
  config,
  volumes: { volumeTar },
  source: { login: input.login, volume: join(input.dir, 'no-volume') },
  key: randomBytes(32),
  store,
  objectKey: input.objectKey,
});
const seconds = (performance.now() - began) / 1000;
process.stdout.write(
  `${JSON.stringify({ seconds, stored: r.sizeBytes, maxRss: process.resourceUsage().maxRSS * 1024 })}\n`,
);
