/**
 * Releases anywhere (issue 26 item 4, CONTRACT "Hosts"), with an s3:// RELEASE_STORE on a real S3 server
 * (s3rver): a release is packed into the store once, after its build; a second host agent (its own DATA_DIR, a
 * process of its own) that starts a release it did not build fetches it from the store, checks its digest and
 * unpacks it, and the environment answers from there through the edge, the absolute path its build wrote still
 * right. A tampered object is refused with a host fault; the store keeps the live release and the RELEASE_KEEP (1
 * here) newest of each environment.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestContext } from '../helpers/context';
import { sessionAgent } from '../helpers/fixtures';
import {
  commitAll,
  createDeployWorld,
  fetchEnvironment,
  runTaskOk,
  taskLog,
  waitForTask,
} from '../helpers/deploy-fixtures';
import { startS3 } from '../helpers/s3';
import { type SecondHost, startSecondHost } from '../helpers/second-host';
import { until } from '../helpers/until';
import { createEnvironmentMachines } from '../../api/machines/service';
import { releaseDirFor } from '../../host/provider/releases';
import { testPortSlot } from '../helpers/test-workers';

const env: Record<string, string> = { RELEASE_KEEP: '1' };
let s3: Awaited<ReturnType<typeof startS3>>;
// before the context reads `env`
beforeAll(async () => {
  s3 = await startS3(['releases']);
  Object.assign(env, {
    RELEASE_STORE: 's3://releases/vc',
    S3_ENDPOINT: s3.endpoint,
    S3_REGION: 'us-east-1',
    S3_ACCESS_KEY_ID: s3.accessKeyId,
    S3_SECRET_ACCESS_KEY: s3.secretAccessKey,
  });
});
afterAll(() => s3?.stop());
const t = useTestContext({ worker: true, env });

const slot = testPortSlot();
const B = `rs3-b-${slot}`;
let hostB: SecondHost;
let client: S3Client;

afterAll(async () => {
  await hostB?.stop();
  if (hostB) rmSync(hostB.dataDir, { recursive: true, force: true });
});

/** The app answers its VERSION, read through the absolute path its build step recorded (BUILD_DIR). */
const ABSOLUTE_APP = `
const http = require('node:http');
const fs = require('node:fs');
const built = fs.readFileSync(__dirname + '/BUILD_DIR', 'utf8').trim();
http.createServer((req, res) => {
  if (req.url === '/healthz') { res.writeHead(200); return res.end('ok'); }
  res.end(fs.readFileSync(built + '/VERSION', 'utf8').trim());
}).listen(Number(process.env.PORT), '127.0.0.1');
`;

async function object(key: string): Promise<Buffer | null> {
  try {
    const r = await client.send(new GetObjectCommand({ Bucket: 'releases', Key: `vc/${key}` }));
    return Buffer.from(await r.Body!.transformToByteArray());
  } catch (err) {
    if ((err as { name?: string }).name === 'NoSuchKey') return null;
    throw err;
  }
}

/** A deploy world whose app records its build directory, its web server placed on `host`. */
async function world(host: string) {
  const w = await createDeployWorld(t);
  w.repo.commit('v1', { buildSteps: ['pwd > BUILD_DIR'] });
  writeFileSync(path.join(w.repo.dir, 'server.js'), ABSOLUTE_APP);
  commitAll(w.repo.dir, 'absolute');
  await t.deps.knex.transaction((trx) => createEnvironmentMachines(trx, t.deps, w.environment));
  await t.deps.knex('servers').where({ environment_id: w.environment.id, role: 'web' }).update({ host });
  return w;
}

async function release(id: string) {
  return t.deps.knex('releases').where({ id }).first();
}

beforeAll(() => {
  client = new S3Client({
    endpoint: s3.endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
  });
});

describe('releases in an s3:// RELEASE_STORE', () => {
  let w: Awaited<ReturnType<typeof world>>;
  let first: string;

  it('a built release is put in the store once, its digest recorded with it', async () => {
    w = await world(t.config.hostName);
    const task = await runTaskOk(t, w.api, `/environments/${w.environment.id}/deploy`, {}, 90_000);
    first = (await t.deps.knex('environments').where({ id: w.environment.id }).first()).live_release_id;
    const row = await release(first);
    const stored = await object(`${w.environment.id}/${first}.tar.gz`);
    expect(stored).not.toBeNull();
    expect(row.archive_sha256).toBe(createHash('sha256').update(stored!).digest('hex'));
    expect(Number(row.archive_bytes)).toBe(stored!.length);
    expect(await taskLog(t, w.api, task.id)).toContain(`==> Release ${first} put in the release store`);
    expect(await fetchEnvironment(w.environment.port)).toEqual({ status: 200, text: 'v1' });
  }, 120_000);

  it('an environment placed on another host goes live there from the store, fetched into its DATA_DIR', async () => {
    // the second agent joins only now: the release was built on the file's own host, which alone polled then
    hostB = await startSecondHost(t, B, env);
    expect(existsSync(releaseDirFor(hostB.dataDir, w.environment.id, first))).toBe(false);
    await t.deps.knex('servers').where({ environment_id: w.environment.id, role: 'web' }).update({ host: B });
    const task = await runTaskOk(t, w.api, `/environments/${w.environment.id}/redeploy`, {}, 90_000);
    const log = await taskLog(t, w.api, task.id);
    expect(log).toContain(`==> Release ${first} fetched from the release store`);
    expect(log).not.toContain('Checking out'); // not built again
    const there = releaseDirFor(hostB.dataDir, w.environment.id, first);
    expect(JSON.parse(readFileSync(path.join(there, '.vc-release.json'), 'utf8')).releaseId).toBe(first);
    // B's supervisor runs it (its record in B's DATA_DIR), and the edge reaches it at B's instance port
    expect(existsSync(path.join(hostB.dataDir, 'environments', w.environment.id, 'current.json'))).toBe(true);
    // the edge's route is B's instance: B's HOST_ADDRESS and a port of B's INSTANCE_PORTS
    const route = await t.deps.knex('edge_routes').where({ environment_id: w.environment.id }).first();
    expect(route.upstream_host).toBe('127.0.0.1');
    expect(route.upstream_port).toBeGreaterThanOrEqual(hostB.instancePorts.from);
    expect(route.upstream_port).toBeLessThanOrEqual(hostB.instancePorts.to);
    expect(await fetchEnvironment(w.environment.port)).toEqual({ status: 200, text: 'v1' });
  }, 240_000);

  it('a tampered archive in the store is refused with a host fault, nothing unpacked', async () => {
    const w2 = await world(t.config.hostName);
    await runTaskOk(t, w2.api, `/environments/${w2.environment.id}/deploy`, {}, 90_000);
    const id = (await t.deps.knex('environments').where({ id: w2.environment.id }).first()).live_release_id;
    // whichever host built it, B must fetch it: its own copy (when it built it) goes
    rmSync(releaseDirFor(hostB.dataDir, w2.environment.id, id), { recursive: true, force: true });
    const original = (await object(`${w2.environment.id}/${id}.tar.gz`))!;
    const tampered = Buffer.from(original);
    tampered[tampered.length - 20] ^= 0xff;
    await client.send(
      new PutObjectCommand({ Bucket: 'releases', Key: `vc/${w2.environment.id}/${id}.tar.gz`, Body: tampered }),
    );
    await t.deps.knex('servers').where({ environment_id: w2.environment.id, role: 'web' }).update({ host: B });
    const res = await w2.api.post(`/environments/${w2.environment.id}/redeploy`, {});
    expect(res.status, res.text).toBe(202);
    const task = await waitForTask(t, w2.api, res.body.id, { timeoutMs: 120_000 });
    expect(task.status).toBe('failed');
    expect(task.error).toContain(
      `release ${id} in the release store does not match the digest recorded when it was built; it was refused`,
    );
    expect(task.error).not.toContain(s3.secretAccessKey);
    expect(existsSync(releaseDirFor(hostB.dataDir, w2.environment.id, id))).toBe(false);
    // the previous instance (on the file's host) keeps serving
    expect(await fetchEnvironment(w2.environment.port)).toEqual({ status: 200, text: 'v1' });
  }, 240_000);

  it('keeps the live release and the RELEASE_KEEP newest; a rollback to a pruned one puts it back', async () => {
    const ids = [first];
    for (const v of ['v2', 'v3']) {
      writeFileSync(path.join(w.repo.dir, 'VERSION'), `${v}\n`);
      commitAll(w.repo.dir, v);
      await runTaskOk(t, w.api, `/environments/${w.environment.id}/deploy`, {}, 120_000);
      ids.push((await t.deps.knex('environments').where({ id: w.environment.id }).first()).live_release_id);
      expect(await fetchEnvironment(w.environment.port)).toEqual({ status: 200, text: v });
    }
    // RELEASE_KEEP 1: v3 is live and the newest; v1 and v2 left the store
    expect(await object(`${w.environment.id}/${ids[2]}.tar.gz`)).not.toBeNull();
    for (const id of ids.slice(0, 2)) {
      expect(await object(`${w.environment.id}/${id}.tar.gz`)).toBeNull();
      expect((await release(id)).archive_sha256).toBeNull();
    }
    // back to v2: pruned from the store, so put back there (B's copy, or one built again); live v2 and newest v3 kept
    const task = await runTaskOk(t, w.api, `/environments/${w.environment.id}/rollback`, {}, 120_000);
    expect(await taskLog(t, w.api, task.id)).toContain(`==> Release ${ids[1]} put in the release store`);
    expect(await fetchEnvironment(w.environment.port)).toEqual({ status: 200, text: 'v2' });
    expect(await object(`${w.environment.id}/${ids[1]}.tar.gz`)).not.toBeNull();
    expect(await object(`${w.environment.id}/${ids[2]}.tar.gz`)).not.toBeNull();
    expect(await object(`${w.environment.id}/${ids[0]}.tar.gz`)).toBeNull();
  }, 360_000);

  it('deleting an environment deletes its releases from the store', async () => {
    const owner = await sessionAgent(t, w.owner);
    const res = await owner.delete(`/environments/${w.environment.id}`, { confirm: w.environment.name });
    expect(res.status, res.text).toBeLessThan(300);
    await until(
      'the environment has nothing left in the store',
      async () => {
        const listed = await client.send(
          new ListObjectsV2Command({
            Bucket: 'releases',
            Prefix: `vc/${w.environment.id}/`,
          }),
        );
        return (listed.Contents ?? []).length === 0;
      },
      { timeoutMs: 60_000, intervalMs: 500 },
    );
  }, 90_000);
});
