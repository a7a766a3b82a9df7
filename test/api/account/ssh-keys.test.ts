import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { useTestContext } from '../../helpers/context';
import { createUser, sessionAgent } from '../../helpers/fixtures';

const t = useTestContext();
const dir = mkdtempSync(join(tmpdir(), 'vc-ssh-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let n = 0;
/** A fresh key pair made by ssh-keygen: the .pub line and ssh-keygen's own fingerprint. */
function keygen(type: string, bits?: number): { publicKey: string; fingerprint: string } {
  const file = join(dir, `key${++n}`);
  execFileSync('ssh-keygen', [
    '-q',
    '-t',
    type,
    ...(bits ? ['-b', String(bits)] : []),
    '-N',
    '',
    '-C',
    `test@${type}`,
    '-f',
    file,
  ]);
  const publicKey = readFileSync(`${file}.pub`, 'utf8');
  const fingerprint = execFileSync('ssh-keygen', ['-lf', `${file}.pub`], { encoding: 'utf8' }).split(' ')[1];
  return { publicKey, fingerprint };
}

async function signedIn() {
  const user = await createUser(t);
  return { user, agent: await sessionAgent(t, user) };
}

describe('POST /me/ssh-keys', () => {
  for (const [type, bits] of [['ed25519'], ['rsa', 2048], ['ecdsa', 256], ['ecdsa', 521]] as const) {
    it(`adds a ${type}${bits ? ` ${bits}` : ''} key with the fingerprint ssh-keygen -lf shows`, async () => {
      const { agent } = await signedIn();
      const key = keygen(type, bits);
      const res = await agent.post('/me/ssh-keys', { name: 'Laptop', public_key: key.publicKey });
      expect(res.status).toBe(201);
      expect(res.body).toEqual({
        id: expect.any(String),
        name: 'Laptop',
        key_type: key.publicKey.split(' ')[0],
        public_key: key.publicKey.trim(),
        fingerprint: key.fingerprint,
        created_at: expect.any(String),
      });
      expect(key.fingerprint).toMatch(/^SHA256:[A-Za-z0-9+/]{43}$/);
    });
  }

  it('refuses the same key twice for one account with 409 on public_key', async () => {
    const { agent } = await signedIn();
    const key = keygen('ed25519');
    expect((await agent.post('/me/ssh-keys', { name: 'one', public_key: key.publicKey })).status).toBe(201);
    const again = await agent.post('/me/ssh-keys', {
      name: 'two',
      public_key: key.publicKey.replace(/test@\S+/, 'other comment'),
    });
    expect(again.status).toBe(409);
    expect(Object.keys(again.body.error.fields)).toEqual(['public_key']);
    expect((await agent.get('/me/ssh-keys')).body.data).toHaveLength(1);
  });

  it('refuses an RSA key under 2048 bits', async () => {
    const { agent } = await signedIn();
    const res = await agent.post('/me/ssh-keys', { name: 'old', public_key: keygen('rsa', 1024).publicKey });
    expect(res.status).toBe(422);
    expect(res.body.error.fields.public_key).toMatch(/1024 bits/);
  });

  it('refuses keys that are not OpenSSH public keys, with 422 on public_key', async () => {
    const { agent } = await signedIn();
    const ed = keygen('ed25519').publicKey.split(' ');
    const rsaBlob = keygen('rsa', 2048).publicKey.split(' ')[1];
    const bad = [
      'hello',
      `ssh-ed25519 ${ed[1].slice(0, -8)}`, // truncated blob
      `ssh-rsa ${ed[1]}`, // the type in front does not match the blob
      `ssh-ed25519 ${rsaBlob}`,
      `ssh-dss ${ed[1]}`,
      `ssh-ed25519 not*base64`,
      '-----BEGIN OPENSSH PRIVATE KEY-----',
      `${ed[0]} ${ed[1]}\nssh-ed25519 ${ed[1]}`,
    ];
    for (const public_key of bad) {
      const res = await agent.post('/me/ssh-keys', { name: 'bad', public_key });
      expect(res.status, public_key).toBe(422);
      expect(Object.keys(res.body.error.fields), public_key).toEqual(['public_key']);
    }
    expect((await agent.get('/me/ssh-keys')).body.data).toEqual([]);
  });

  it('reports name and public_key together', async () => {
    const { agent } = await signedIn();
    const res = await agent.post('/me/ssh-keys', { name: '', public_key: 'nope' });
    expect(res.status).toBe(422);
    expect(Object.keys(res.body.error.fields).sort()).toEqual(['name', 'public_key']);
  });
});

describe('GET /me/ssh-keys', () => {
  it("lists only the caller's keys", async () => {
    const a = await signedIn();
    const b = await signedIn();
    await a.agent.post('/me/ssh-keys', { name: 'a', public_key: keygen('ed25519').publicKey });
    await b.agent.post('/me/ssh-keys', { name: 'b', public_key: keygen('ed25519').publicKey });
    const res = await a.agent.get('/me/ssh-keys');
    expect(res.status).toBe(200);
    expect(res.body.data.map((k: { name: string }) => k.name)).toEqual(['a']);
  });
});

describe('DELETE /me/ssh-keys/{id}', () => {
  it("removes the caller's key and answers 404 for another account's", async () => {
    const a = await signedIn();
    const b = await signedIn();
    const key = (await a.agent.post('/me/ssh-keys', { name: 'a', public_key: keygen('ed25519').publicKey })).body;
    expect((await b.agent.delete(`/me/ssh-keys/${key.id}`)).status).toBe(404);
    expect((await a.agent.get('/me/ssh-keys')).body.data).toHaveLength(1);
    expect((await a.agent.delete(`/me/ssh-keys/${key.id}`)).status).toBe(204);
    expect((await a.agent.get('/me/ssh-keys')).body.data).toEqual([]);
    expect((await a.agent.delete(`/me/ssh-keys/${key.id}`)).status).toBe(404);
    expect((await a.agent.delete('/me/ssh-keys/not-a-uuid')).status).toBe(404);
  });
});
