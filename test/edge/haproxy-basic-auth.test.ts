/**
 * The environment's Basic password on HAProxy (issue 18 items 3 and 6): a real HAProxy 2.6 run from the
 * fragment of edge/basic-auth/haproxy.ts, the password map and the legacy checker of the control plane,
 * the API's PATCH, PostgreSQL, and a tiny real app behind it. The request log's fragment is in the frontend as the
 * edge has it: its sequence numbers share sticky counter 2 with the password's failed attempts.
 */
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BasicAuth, startBasicAuth } from '../../edge/basic-auth/control';
import {
  basicAuthRules,
  basicAuthSections,
  basicAuthTakesSc2,
  basicAuthUseBackend,
  basicAuthVerdict,
  WWW_AUTHENTICATE,
} from '../../edge/basic-auth/haproxy';
import {
  REQUEST_SEQUENCE_TABLE,
  requestLogFrontend,
  requestLogGlobal,
  requestLogRules,
  requestLogSections,
} from '../../edge/request-log/haproxy';
import { RequestLogReader } from '../../logs/request-reader';
import { runtimeCommand } from '../../edge/runtime-command';
import { edgePasswordKey } from '../../system/edge-password';
import { useTestContext } from '../helpers/context';
import { createEnvironment } from '../helpers/deploy-fixtures';
import { createProject, createTeam, createUser, sessionAgent } from '../helpers/fixtures';
import {
  basic,
  type ConfiguredHaproxy,
  DEFAULTS,
  request,
  startConfiguredHaproxy,
  startTinyApp,
} from '../helpers/haproxy-config';
import type { Agent } from '../helpers/http';
import { until } from '../helpers/until';

const t = useTestContext();
let haproxy: ConfiguredHaproxy;
let app: Awaited<ReturnType<typeof startTinyApp>>;
let auth: BasicAuth;
let owner: Agent;
let reader: RequestLogReader;
/** The request log's lines as the reader hands them on, and what it counted lost. */
const lines: { envId: string; line: { path: string; status: number; client_address: string } }[] = [];
let dropped = 0;
const envs: Record<'a' | 'b' | 'legacy', { id: string }> = {} as never;
const PASS = 'open sesame 1';

const syncMap = () => auth.sync();
const edgeOf = (env: { id: string }) => `/environments/${env.id}/edge`;
const get = (which: keyof typeof envs, from: string, headers: Record<string, string> = {}) =>
  request(haproxy.port, { host: `${which}.test`, from, headers });

beforeAll(async () => {
  const user = await createUser(t);
  const team = await createTeam(t, user);
  const project = await createProject(t, team);
  for (const k of ['a', 'b', 'legacy'] as const) envs[k] = await createEnvironment(t, project, { name: k });
  owner = await sessionAgent(t, user);
  for (const k of ['a', 'b', 'legacy'] as const) {
    const res = await owner.patch(edgeOf(envs[k]), { password: { username: 'team', password: PASS } });
    expect(res.status, res.text).toBe(200);
  }
  // A row saved before the digest existed: the argon2id hash only.
  await t.deps.knex('environment_edges').where({ environment_id: envs.legacy.id }).update({
    password_digest: null,
    password_digest_key_id: null,
  });

  app = await startTinyApp();
  const adminSocket = join(t.dataDir, 'haproxy-admin.sock');
  auth = await startBasicAuth({ knex: t.deps.knex, secrets: t.deps.secrets, dataDir: t.dataDir, adminSocket });
  const readerSocket = join(t.dataDir, 'request-log.sock');
  reader = await new RequestLogReader({
    socketPath: readerSocket,
    cursorFile: join(t.dataDir, 'request-log-cursor.json'),
    reorderMs: 300,
    sink: {
      pushBlock: (envId, block) => {
        for (const text of block.toString().slice(0, -1).split('\n')) lines.push({ envId, line: JSON.parse(text) });
      },
      countDropped: (_envId, n) => {
        dropped += n;
      },
    },
  }).start();
  haproxy = await startConfiguredHaproxy(
    ({ port, socket, dir }) => {
      const hosts = join(dir, 'hosts.map');
      writeFileSync(
        hosts,
        Object.entries(envs)
          .map(([k, e]) => `${k}.test ${e.id}\n`)
          .join(''),
      );
      return [
        'global',
        `  stats socket ${socket} level admin`,
        ...requestLogGlobal().map((l) => `  ${l}`),
        ...DEFAULTS,
        ...basicAuthSections(auth.fragment),
        ...requestLogSections({ socket: readerSocket }),
        'frontend web',
        `  bind 127.0.0.1:${port}`,
        ...requestLogFrontend().map((l) => `  ${l}`),
        `  http-request set-var(txn.env) req.hdr(host),host_only,map(${hosts})`,
        '  http-request set-var(txn.client) src',
        ...basicAuthVerdict(auth.fragment).map((l) => `  ${l}`),
        ...requestLogRules({ unless: basicAuthTakesSc2() }).map((l) => `  ${l}`),
        ...basicAuthRules(auth.fragment).map((l) => `  ${l}`),
        ...basicAuthUseBackend().map((l) => `  ${l}`),
        '  default_backend app',
        'backend app',
        `  server app 127.0.0.1:${app.port}`,
        '',
      ].join('\n');
    },
    { files: [auth.paths.keyConfig], socket: adminSocket },
  );
}, 60_000);

afterAll(async () => {
  await auth?.close();
  await haproxy?.stop();
  await reader?.close();
  await app?.close();
});

describe('the Basic password on HAProxy', () => {
  it('starts HAProxy from the files it wrote: mode 0600, a digest per environment, never the password', async () => {
    expect(await syncMap()).toBe(0); // HAProxy holds what the file says
    expect(statSync(auth.paths.keyConfig).mode & 0o777).toBe(0o600);
    expect(readFileSync(auth.paths.keyConfig, 'utf8')).not.toContain(PASS);
    const text = readFileSync(auth.paths.mapFile, 'utf8');
    expect(statSync(auth.paths.mapFile).mode & 0o777).toBe(0o600);
    expect(text).toContain(`${envs.a.id} `);
    expect(text).toContain(`${envs.legacy.id} legacy`);
    expect(text).not.toContain(PASS);
    expect(await runtimeCommand(haproxy.socket, `show map ${auth.paths.mapFile}`)).toMatch(
      new RegExp(`${envs.a.id} [0-9a-f]{64}`),
    );
  });

  it('answers the right password with the app, a wrong or missing one with 401 and WWW-Authenticate', async () => {
    const ok = await get('a', '127.0.0.1', basic('team', PASS));
    expect(ok.status).toBe(200);
    expect(ok.text).toBe('app /');
    for (const headers of [basic('team', 'wrong password'), basic('other', PASS), {}]) {
      const res = await get('a', '127.0.0.1', headers);
      expect(res.status).toBe(401);
      expect(res.headers['www-authenticate']).toBe(WWW_AUTHENTICATE);
    }
  });

  it('refuses the 11th wrong attempt in the window with 429 and Retry-After, then even the right one', async () => {
    const from = '127.0.0.23';
    for (let i = 0; i < 10; i++) expect((await get('a', from, basic('team', `guess ${i}`))).status).toBe(401);
    const eleventh = await get('a', from, basic('team', 'guess 10'));
    expect(eleventh.status).toBe(429);
    expect(eleventh.headers['retry-after']).toBe('300');
    expect((await get('a', from, basic('team', PASS))).status).toBe(429);
    // Another address, and another environment from the same address, are not affected.
    expect((await get('a', '127.0.0.24', basic('team', PASS))).status).toBe(200);
    expect((await get('b', from, basic('team', PASS))).status).toBe(200);
    // A request without credentials is not an attempt: a fresh address may ask any number of times.
    for (let i = 0; i < 12; i++) expect((await get('b', '127.0.0.25')).status).toBe(401);
    expect((await get('b', '127.0.0.25', basic('team', PASS))).status).toBe(200);
  });

  it("logs every request, failed attempts too; the request log's sequence counts the rest, the password only the failures", async () => {
    const from = '127.0.0.61';
    const seqOf = async (envId: string) => {
      const shown = await runtimeCommand(haproxy.socket, `show table ${REQUEST_SEQUENCE_TABLE} key ${envId}`);
      return Number(/gpc0=(\d+)/.exec(shown)?.[1] ?? 0);
    };
    const before = await seqOf(envs.a.id);
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) statuses.push((await get('a', from, basic('team', PASS))).status);
    for (let i = 0; i < 4; i++) statuses.push((await get('a', from, basic('team', `guess ${i}`))).status);
    for (let i = 0; i < 2; i++) statuses.push((await get('a', from)).status);
    // on connections of their own, at once: HAProxy's threads share the environment's counter
    statuses.push(
      ...(await Promise.all(Array.from({ length: 30 }, () => get('a', from, basic('team', PASS))))).map(
        (r) => r.status,
      ),
    );
    expect(statuses.filter((x) => x === 200)).toHaveLength(33);
    expect(statuses.filter((x) => x === 401)).toHaveLength(6);
    const mine = () => lines.filter((l) => l.envId === envs.a.id && l.line.client_address === from);
    await until('every line', () => mine().length === 39, { detail: () => `${mine().length} lines` });
    await new Promise((r) => setTimeout(r, 600)); // past the reader's reorderMs: a gap would be counted by now
    expect(mine().filter((l) => l.line.status === 401)).toHaveLength(6);
    expect(dropped).toBe(0);
    expect(reader.counts.duplicates).toBe(0);
    // numbered: the 33 answered and the 2 without credentials; the 4 failed attempts count for the password only
    expect((await seqOf(envs.a.id)) - before).toBe(35);
    const fails = await runtimeCommand(haproxy.socket, `show table vc_pw_fails key ${from}/${envs.a.id}`);
    expect(fails).toMatch(/gpc1=4\b/);
  });

  it('checks a legacy (argon2id-only) row once: 307 to the same URL, then HAProxy alone from the digest', async () => {
    const before = auth.checker.verifications();
    const wrong = await get('legacy', '127.0.0.31', basic('team', 'not it'));
    expect(wrong.status).toBe(401);
    expect(wrong.headers['www-authenticate']).toBe(WWW_AUTHENTICATE);
    const first = await request(haproxy.port, {
      host: 'legacy.test',
      path: '/x?y=1',
      from: '127.0.0.31',
      headers: basic('team', PASS),
    });
    expect(first.status).toBe(307);
    expect(first.headers.location).toBe('/x?y=1');
    const row = await t.deps.knex('environment_edges').where({ environment_id: envs.legacy.id }).first();
    expect(row.password_digest).toMatch(/^[0-9a-f]{64}$/);
    expect(row.password_digest_key_id).toBe(edgePasswordKey(t.deps.secrets).id);
    const again = await request(haproxy.port, {
      host: 'legacy.test',
      path: '/x?y=1',
      from: '127.0.0.31',
      headers: basic('team', PASS),
    });
    expect(again.status).toBe(200);
    expect(again.text).toBe('app /x?y=1');
    expect((await get('legacy', '127.0.0.31', basic('team', 'not it'))).status).toBe(401);
    expect(auth.checker.verifications() - before).toBe(2); // the wrong one and the right one, nothing after
    expect(readFileSync(auth.paths.mapFile, 'utf8')).toContain(`${envs.legacy.id} ${row.password_digest}`);
  });

  it("counts the legacy checker's 401s as failed attempts too", async () => {
    await t.deps.knex('environment_edges').where({ environment_id: envs.b.id }).update({ password_digest: null });
    await syncMap();
    const from = '127.0.0.41';
    for (let i = 0; i < 10; i++) expect((await get('b', from, basic('team', `guess ${i}`))).status).toBe(401);
    expect((await get('b', from, basic('team', PASS))).status).toBe(429);
  });

  it('takes a new password and its removal without a reload; GET edge never shows the digest', async () => {
    const res = await owner.patch(edgeOf(envs.a), { password: { username: 'team', password: 'a new one 22' } });
    expect(res.status, res.text).toBe(200);
    expect(JSON.stringify(res.body)).not.toMatch(/digest|[0-9a-f]{64}/);
    expect(await syncMap()).toBe(1);
    expect((await get('a', '127.0.0.51', basic('team', PASS))).status).toBe(401);
    expect((await get('a', '127.0.0.51', basic('team', 'a new one 22'))).status).toBe(200);
    const shown = await owner.get(edgeOf(envs.a));
    expect(shown.body).toEqual({
      allowed_addresses: [],
      password: { enabled: true, username: 'team' },
      stickiness: false,
    });
    expect(JSON.stringify(shown.body)).not.toMatch(/digest|[0-9a-f]{64}/);

    expect((await owner.patch(edgeOf(envs.a), { password: null })).status).toBe(200);
    const row = await t.deps.knex('environment_edges').where({ environment_id: envs.a.id }).first();
    expect(row.password_digest).toBeNull();
    expect(await syncMap()).toBe(1);
    expect((await get('a', '127.0.0.51')).status).toBe(200);
    // HAProxy was loaded once: every change went through the runtime API
    expect(haproxy.output().match(/Loading success/g)).toHaveLength(1);
  });
});
