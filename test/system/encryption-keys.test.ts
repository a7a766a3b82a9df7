import { randomBytes, randomUUID } from 'node:crypto';
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestContext } from '../helpers/context';
import { createProject, createTeam, createUser, sessionAgent } from '../helpers/fixtures';
import { createEnvironment } from '../helpers/deploy-fixtures';
import { Agent } from '../helpers/http';
import { spawnApi, stopChildren } from '../helpers/processes';
import { runOperatorCli } from '../helpers/host-moves';
import { seal, sealedKeyId } from '../../system/crypto';
import { loadSecrets } from '../../system/secrets';
import { pitrPassphrase } from '../../host/pitr';
import { aad } from '../../db/aad';
import { SEALED_COLUMNS } from '../../db/queries/sealed-values';
import { variablesLiveColumn } from '../../db/queries/variables';

/**
 * The encryption key's rotation (`npm run keys`, processes/keys.ts, docs/encryption-keys.md), on the file's own
 * DATA_DIR (its key generated under DATA_DIR/secrets, as npm start's is): values sealed under the old key open
 * after `rotate`, `reseal` seals them under the new one (never before every host has it), `retire` forgets the old
 * key only once nothing is sealed under it, and an API process that holds only the new key reads every value.
 */
const t = useTestContext();
const children: ChildProcess[] = [];
const keys = (...args: string[]) => runOperatorCli(t, 'keys', {}, ...args);
const keysWith = (env: Record<string, string>, ...args: string[]) => runOperatorCli(t, 'keys', env, ...args);

/** The key ids the variables' values are sealed under, by name. */
const variableKeys = async () =>
  Object.fromEntries(
    (await t.deps.knex('variables').select('name', 'value_sealed')).map((r) => [r.name, r.value_sealed.split('.')[1]]),
  );

let owner: Agent;
let envId: string;
let projectId: string;
let teamId: string;
let first: string;
let passphrase: string;
const passphraseFile = () => join(t.dataDir, 'secrets', 'pitr-passphrase.sealed');

beforeAll(async () => {
  const user = await createUser(t);
  const team = await createTeam(t, user);
  teamId = team.id;
  const project = await createProject(t, team);
  projectId = project.id;
  envId = (await createEnvironment(t, project, { name: 'production' })).id;
  owner = await sessionAgent(t, user);
  first = t.deps.secrets.encryptionKey.id;
  // the WAL archive's passphrase, sealed in DATA_DIR as npm start's services server makes it
  passphrase = pitrPassphrase(t.dataDir, t.deps.secrets);
  // sealed under the first key, through the API
  expect(
    (await owner.post(`/projects/${projectId}/variables`, { name: 'SHARED', value: 'from-the-project' })).status,
  ).toBe(201);
  expect(
    (await owner.post(`/environments/${envId}/variables`, { name: 'API_URL', value: 'https://a.example' })).status,
  ).toBe(201);
  // processes live on the environment, started with exactly this set (recorded under the first key, as a go-live does)
  const release = {
    id: randomUUID(),
    team_id: teamId,
    project_id: projectId,
    environment_id: envId,
    git_ref: 'main',
    commit_sha: 'a'.repeat(40),
    status: 'ready',
  };
  await t.deps.knex('releases').insert(release);
  await t.deps
    .knex('environments')
    .where({ id: envId })
    .update({
      live_release_id: release.id,
      variables_live: variablesLiveColumn(t.deps.secrets, { SHARED: 'from-the-project', API_URL: 'https://a.example' }),
    });
  expect(
    (
      await owner.post(`/projects/${projectId}/registries`, {
        host: 'npm.example.com',
        username: 'ci',
        password: 's3cret-pass',
      })
    ).status,
  ).toBe(201);
});
afterAll(() => stopChildren(children));

/** The environment's variables through `url`, as the owner sees them. */
async function variablesVia(url: string) {
  const agent = Object.assign(new Agent(url), { cookies: owner.cookies, csrf: owner.csrf });
  const res = await agent.get(`/environments/${envId}/variables`);
  expect(res.status).toBe(200);
  return res.body as { data: Array<{ name: string; value: string }>; live: { applied: boolean } | null };
}

/** Their values by name. */
const valuesVia = async (url: string): Promise<Record<string, string>> =>
  Object.fromEntries((await variablesVia(url)).data.map((v) => [v.name, v.value]));

describe('npm run keys', () => {
  it('knows every sealed column of the schema', async () => {
    const { rows } = await t.deps.knex.raw(
      `SELECT table_name, column_name FROM information_schema.columns
        WHERE table_schema = 'public' AND column_name LIKE '%sealed%' ORDER BY 1, 2`,
    );
    const known = new Set(SEALED_COLUMNS.map((c) => `${c.table}.${c.column}`));
    expect(
      rows
        .map((r: { table_name: string; column_name: string }) => `${r.table_name}.${r.column_name}`)
        .filter((c: string) => !known.has(c)),
    ).toEqual([]);
    // and the two sealed columns whose names do not say so
    expect(known).toContain('projects.webhook_secret');
    expect(known).toContain('projects.repository_credentials');
  });

  it('status counts the sealed values by key; with one key, reseal has nothing to do and retire refuses the current key', async () => {
    // (the live processes' set reads as applied)
    expect((await owner.get(`/environments/${envId}/variables`)).body.live).toMatchObject({ applied: true });
    const status = await keys('status');
    expect(status.code, status.stderr + status.stdout).toBe(0);
    expect(status.stdout).toContain(`Encryption key: ${first}`);
    expect(status.stdout).toContain('Previous encryption keys: none');
    expect(status.stdout).toMatch(new RegExp(`Sealed values: 4 under ${first}`));
    const reseal = await keys('reseal');
    expect(reseal.code, reseal.stderr + reseal.stdout).toBe(0);
    expect(reseal.stdout).toContain(`Every sealed value is under ${first}.`);
    const retire = await keys('retire', first);
    expect(retire.code, retire.stderr + retire.stdout).toBe(1);
    expect(retire.stderr).toContain(`${first} is a current key: rotate first.`);
  });

  it('rotates: the old key opens what it sealed, reseal waits for every host, then moves every value to the new key', async () => {
    const rotated = await keys('rotate');
    expect(rotated.code, rotated.stderr + rotated.stdout).toBe(0);
    const second = /New key (\S+);/.exec(rotated.stdout)![1]!;
    expect(second).not.toBe(first);
    expect(rotated.stdout).toContain(`${first} is set aside`);
    // a new host's settings carry the old key beside the new one
    const joined = await runOperatorCli(t, 'hosts', {}, 'join', 'h-new');
    expect(joined.stdout).toContain(`ENCRYPTION_KEY_ID=${second}`);
    expect(joined.stdout).toMatch(new RegExp(`ENCRYPTION_KEYS_PREVIOUS=${first}:[0-9a-f]{64}\\b`));
    // nothing moved yet; the old key cannot be retired while values are under it
    expect(await variableKeys()).toEqual({ SHARED: first, API_URL: first });
    const early = await keys('retire', first);
    expect(early.code, early.stderr + early.stdout).toBe(1);
    expect(early.stderr).toContain(`4 values are still sealed under ${first}`);

    // an API process started now holds both keys: it reads what the first sealed, and seals under the second
    const api = await spawnApi(t, children);
    expect(await valuesVia(api)).toEqual({ SHARED: 'from-the-project', API_URL: 'https://a.example' });
    // the live processes' set, recorded under the first key, still reads as applied
    expect((await variablesVia(api)).live).toMatchObject({ applied: true });
    const agent = Object.assign(new Agent(api), { cookies: owner.cookies, csrf: owner.csrf });
    expect(
      (await agent.post(`/environments/${envId}/variables`, { name: 'NEW_ONE', value: 'sealed-under-the-second' }))
        .status,
    ).toBe(201);
    expect((await variableKeys()).NEW_ONE).toBe(second);
    expect((await variablesVia(api)).live).toMatchObject({ applied: false }); // a change the processes do not have

    // the file's own host (test/helpers/context.ts) still runs with the first key: nothing is resealed, and it says so
    const refused = await keys('reseal');
    expect(refused.code, refused.stderr + refused.stdout).toBe(1);
    expect(refused.stderr).toContain(`host ${t.config.hostName} runs with key ${first}, not ${second}`);
    expect((await variableKeys()).SHARED).toBe(first);
    // the operator's list shows the key each host runs with, as JSON and in its table
    const listed = await runOperatorCli(t, 'hosts', {}, 'list', '--json');
    expect(JSON.parse(listed.stdout)).toContainEqual(
      expect.objectContaining({ name: t.config.hostName, encryption_key_id: first }),
    );
    const table = (await runOperatorCli(t, 'hosts', {}, 'list')).stdout.split('\n');
    expect(table[0]).toMatch(/\bKEY\b/);
    expect(table.find((line) => line.startsWith(`${t.config.hostName} `))).toContain(` ${first} `);
    // as its restart with the new key records it (core/host-registration.ts); the file seals nothing more in process
    await t.deps.knex('hosts').where({ name: t.config.hostName }).update({ encryption_key_id: second });

    const resealed = await keys('reseal');
    expect(resealed.code, resealed.stderr + resealed.stdout).toBe(0);
    expect(resealed.stdout).toContain('variables.value_sealed: 2 resealed');
    expect(resealed.stdout).toContain('project_registries.sealed_password: 1 resealed');
    expect(resealed.stdout).toContain(`Every sealed value is under ${second}.`);
    expect(await variableKeys()).toEqual({ SHARED: second, API_URL: second, NEW_ONE: second });
    expect(resealed.stdout).toContain('pitr-passphrase.sealed: resealed');
    expect(sealedKeyId(readFileSync(passphraseFile(), 'utf8'))).toBe(second);
    expect(pitrPassphrase(t.dataDir, loadSecrets(t.dataDir))).toBe(passphrase);
    expect(await valuesVia(api)).toMatchObject({ SHARED: 'from-the-project', API_URL: 'https://a.example' });

    // a value no key here opens is left as it is, named, and the command fails
    const orphan = seal(
      { encryptionKey: { id: 'lost-key', key: randomBytes(32) } },
      'x',
      aad.variable({ projectId, environmentId: envId }, 'ORPHAN'),
    );
    await t.deps
      .knex('variables')
      .insert({ team_id: teamId, project_id: projectId, environment_id: envId, name: 'ORPHAN', value_sealed: orphan });
    const partial = await keys('reseal');
    expect(partial.code, partial.stderr + partial.stdout).toBe(1);
    expect(partial.stderr).toContain('1 values are sealed under a key this process does not hold');
    expect(partial.stdout).toMatch(/variables\.value_sealed: 0 resealed, 1 no key opens \(.+ \(key lost-key\)\)/);
    expect((await t.deps.knex('variables').where({ name: 'ORPHAN' }).first()).value_sealed).toBe(orphan);
    await t.deps.knex('variables').where({ name: 'ORPHAN' }).delete();

    // the first key is retired: forgotten from DATA_DIR, and no longer given to new hosts
    const retired = await keys('retire', first);
    expect(retired.code, retired.stderr + retired.stdout).toBe(0);
    expect(retired.stdout).toContain(`Key ${first} is forgotten.`);
    const previousFile = join(t.dataDir, 'secrets', 'encryption-keys-previous.json');
    expect(existsSync(previousFile) ? readFileSync(previousFile, 'utf8') : '').not.toContain(first);
    expect((await runOperatorCli(t, 'hosts', {}, 'join', 'h-new')).stdout).not.toContain('ENCRYPTION_KEYS_PREVIOUS');
    // an API process holding only the second key reads every value
    expect(await valuesVia(await spawnApi(t, children))).toEqual({
      SHARED: 'from-the-project',
      API_URL: 'https://a.example',
      NEW_ONE: 'sealed-under-the-second',
    });
  });

  it('with ENCRYPTION_KEY: rotate says how; a malformed ENCRYPTION_KEYS_PREVIOUS, or one naming the current id, is refused by name', async () => {
    const key = randomBytes(32).toString('hex');
    const withKey = (previous?: string) => ({
      ENCRYPTION_KEY: key,
      ENCRYPTION_KEY_ID: 'k2',
      ...(previous ? { ENCRYPTION_KEYS_PREVIOUS: previous } : {}),
    });
    const rotate = await keysWith(withKey(), 'rotate');
    expect(rotate.code, rotate.stderr + rotate.stdout).toBe(1);
    expect(rotate.stderr).toContain('The key comes from ENCRYPTION_KEY: rotate it there.');
    const malformed = await keysWith(withKey('no-colon'), 'status');
    expect(malformed.code, malformed.stderr + malformed.stdout).toBe(1);
    expect(malformed.stderr).toContain('ENCRYPTION_KEYS_PREVIOUS holds `id:key` pairs');
    const same = await keysWith(withKey(`k2:${randomBytes(32).toString('hex')}`), 'status');
    expect(same.code, same.stderr + same.stdout).toBe(1);
    expect(same.stderr).toContain('ENCRYPTION_KEYS_PREVIOUS names k2, the id of the current key');
    const fine = await keysWith(withKey(`k1:${randomBytes(32).toString('hex')}`), 'status');
    expect(fine.code, fine.stderr + fine.stdout).toBe(0);
    expect(fine.stdout).toContain('Encryption key: k2 (ENCRYPTION_KEY)');
    expect(fine.stdout).toContain('Previous encryption keys: k1');
    // elsewhere than the control plane's DATA_DIR: no key is made there
    const elsewhere = join(t.dataDir, 'not-the-control-plane');
    const lost = await keysWith({ DATA_DIR: elsewhere }, 'rotate');
    expect(lost.code, lost.stderr + lost.stdout).toBe(1);
    expect(lost.stderr).toContain(`No encryption-key.json under ${elsewhere}/secrets and no ENCRYPTION_KEY`);
    expect(existsSync(join(elsewhere, 'secrets', 'encryption-key.json'))).toBe(false);
  });

  it('retire looks an id up by kind: a DATA_DIR whose encryption key and token key share an id retires the previous one', async () => {
    // a DATA_DIR from before key ids had a random part: both keys made in the same millisecond, under one id
    const dir = join(t.dataDir, 'colliding-ids');
    mkdirSync(join(dir, 'secrets'), { recursive: true, mode: 0o700 });
    const shared = 'kcollided';
    for (const file of ['encryption-key.json', 'token-hmac-key.json'])
      writeFileSync(
        join(dir, 'secrets', file),
        JSON.stringify({ id: shared, key: randomBytes(32).toString('base64') }),
        { mode: 0o600 },
      );
    const inDir = (...args: string[]) => keysWith({ DATA_DIR: dir }, ...args);
    const current = await inDir('retire', shared);
    expect(current.code, current.stderr + current.stdout).toBe(1);
    expect(current.stderr).toContain(`${shared} is a current key: rotate first.`);
    const rotated = await inDir('rotate');
    expect(rotated.code, rotated.stderr + rotated.stdout).toBe(0);
    const next = /New key (\S+);/.exec(rotated.stdout)![1]!;
    // the old encryption key is still the token key's id: it is retired as the previous encryption key it is
    const retired = await inDir('retire', shared);
    expect(retired.code, retired.stderr + retired.stdout).toBe(0);
    expect(retired.stdout).toContain(`Key ${shared} is forgotten.`);
    expect(existsSync(join(dir, 'secrets', 'encryption-keys-previous.json'))).toBe(false);
    const secrets = loadSecrets(dir);
    expect([secrets.encryptionKey.id, secrets.tokenKey.id, secrets.previousEncryptionKeys.size]).toEqual([
      next,
      shared,
      0,
    ]);
    // the token key under that id is still current
    const again = await inDir('retire', shared);
    expect(again.code, again.stderr + again.stdout).toBe(1);
    expect(again.stderr).toContain(`${shared} is a current key: rotate first.`);
    const unknown = await inDir('retire', 'knothere');
    expect(unknown.stderr).toContain('No previous key is named knothere (npm run keys -- status).');
  });

  it('rotates the token key: tokens under the old key work and take the new one at their next use; it is retired once none is left', async () => {
    const issue = async (purpose: string) => {
      const res = await owner.post('/me/tokens', { purpose, team_id: teamId, expires_in_days: 7 });
      expect(res.status).toBe(201);
      return { id: res.body.id as string, token: res.body.token as string };
    };
    const used = await issue('ci-used');
    const idle = await issue('ci-idle');
    const oldKey = (await t.deps.knex('access_tokens').where({ id: used.id }).first()).key_id;
    const rotated = await keys('rotate', '--token');
    expect(rotated.code, rotated.stderr + rotated.stdout).toBe(0);
    const newKey = /New token key (\S+);/.exec(rotated.stdout)![1]!;
    expect(newKey).not.toBe(oldKey);

    // an API process started now finds the token under the old key, and moves it to the new one
    const api = await spawnApi(t, children);
    const before = await t.deps.knex('access_tokens').where({ id: used.id }).first();
    expect((await new Agent(api).withBearer(used.token).get('/me')).status).toBe(200);
    const after = await t.deps.knex('access_tokens').where({ id: used.id }).first();
    expect(after.key_id).toBe(newKey);
    expect(after.digest).not.toBe(before.digest);
    expect((await new Agent(api).withBearer(used.token).get('/me')).status).toBe(200);
    const status = await keys('status');
    expect(status.stdout).toContain(`Token key: ${newKey}`);
    expect(status.stdout).toContain(`Previous token keys: ${oldKey}`);
    expect(status.stdout).toMatch(
      new RegExp(`1 under ${oldKey} take the current key at their next use; the last expires \\d{4}-`),
    );

    // the idle token still works under the old key: the key is not retired while it does
    const early = await keys('retire', oldKey);
    expect(early.code, early.stderr + early.stdout).toBe(1);
    expect(early.stderr).toContain(`1 working tokens are still under ${oldKey}`);
    expect((await owner.delete(`/me/tokens/${idle.id}`)).status).toBe(200);
    const retired = await keys('retire', oldKey);
    expect(retired.code, retired.stderr + retired.stdout).toBe(0);
    expect(retired.stdout).toContain(`Token key ${oldKey} is forgotten.`);
    // an API process holding only the new key: the used token works, the revoked one does not
    const fresh = await spawnApi(t, children);
    expect((await new Agent(fresh).withBearer(used.token).get('/me')).status).toBe(200);
    expect((await new Agent(fresh).withBearer(idle.token).get('/me')).status).toBe(401);
  });
});
