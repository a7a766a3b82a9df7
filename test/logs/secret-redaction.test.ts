/**
 * A web process that prints its secret variables (as they are, and base64-encoded) must not send them out
 * through log forwarding nor leave them in the machine's copies: the shipped lines show `[secret]`, as task
 * logs do. Checked end to end: a deployed app, the edge and the worker's shippers, a real HTTP collector
 * and a real syslog listener on loopback, and the machine's day files.
 */
import { existsSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { machineFile } from '../../logs/machine-files';
import { useTestContext } from '../helpers/context';
import { commitServer, createDeployWorld, runTaskOk } from '../helpers/deploy-fixtures';
import { startReceiver, type Receiver } from '../helpers/receiver';
import { requestUntilMessage, saveSyslogDestination, startSyslog } from '../helpers/syslog';
import { sessionAgent } from '../helpers/fixtures';
import type { Agent } from '../helpers/http';

const t = useTestContext({ worker: true, env: { OUTBOUND_ALLOWED_HOSTS: '127.0.0.1' } });
let w: Awaited<ReturnType<typeof createDeployWorld>>;
let receiver: Receiver;
let owner: Agent;

const API_TOKEN = 'sk_live_7Hq2mX9pL4vR8nW1';
const DB_PASSWORD = 'pw-Zt6yB3kQ0sJ5';
const b64 = (s: string) => Buffer.from(s).toString('base64');
const LEAKS = [API_TOKEN, DB_PASSWORD, b64(API_TOKEN), b64(DB_PASSWORD)];

/** GET /leak/... prints the secrets to stderr, raw and base64-encoded, and answers 500. */
const SERVER_JS = `
const http = require('node:http');
http.createServer((req, res) => {
  if (req.url === '/healthz') { res.writeHead(200); return res.end('ok'); }
  if (req.url.startsWith('/leak')) {
    const { API_TOKEN, DB_PASSWORD } = process.env;
    console.error('leak ' + req.url + ' token=' + API_TOKEN + ' auth=' + Buffer.from(API_TOKEN).toString('base64') +
      ' db=' + DB_PASSWORD + ' db64=' + Buffer.from(DB_PASSWORD).toString('base64'));
    res.writeHead(500); return res.end('failed');
  }
  res.writeHead(200); res.end('ok');
}).listen(Number(process.env.PORT), '127.0.0.1');
`;

beforeAll(async () => {
  w = await createDeployWorld(t);
  commitServer(w.repo, SERVER_JS, 'leaky app');
  owner = await sessionAgent(t, w.owner);
  const env = await owner.post(`/environments/${w.environment.id}/variables`, {
    name: 'API_TOKEN',
    value: API_TOKEN,
    secret: true,
  });
  expect(env.status, env.text).toBe(201);
  const project = await owner.post(`/projects/${w.project.id}/variables`, {
    name: 'DB_PASSWORD',
    value: DB_PASSWORD,
    secret: true,
  });
  expect(project.status, project.text).toBe(201);
  receiver = await startReceiver(0, '/ingest');
  const saved = await owner.post(`/projects/${w.project.id}/logs`, {
    destination: { kind: 'http', name: 'collector', url: receiver.url },
  });
  expect(saved.body.can_send).toBe(true);
  await runTaskOk(t, w.api, `/environments/${w.environment.id}/deploy`, undefined, 90_000);
}, 150_000);
afterAll(async () => {
  await receiver?.stop();
});

const get = (p: string) => fetch(`http://127.0.0.1:${w.environment.port}${p}`);

function expectNoLeak(text: string) {
  for (const leak of LEAKS) expect(text).not.toContain(leak);
}

describe('secret variables in shipped lines', () => {
  it('reach the http collector and the machine files as [secret] (stderr and the request path)', async () => {
    expect((await get(`/leak/${API_TOKEN}`)).status).toBe(500);
    let all = '';
    await expect
      .poll(
        () => {
          all = receiver.received.map((x) => x.body).join('');
          return all.includes('"type":"stderr"') && all.includes('/leak/');
        },
        { timeout: 30_000, interval: 200 },
      )
      .toBe(true);
    const stderr = all
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l))
      .find((l) => l.type === 'stderr' && l.message.startsWith('leak'));
    expect(stderr.message).toBe('leak /leak/[secret] token=[secret] auth=[secret] db=[secret] db64=[secret]');
    expectNoLeak(all);

    const today = new Date().toISOString().slice(0, 10);
    const errors = machineFile(t.dataDir, w.environment.id, 'errors', today);
    const requests = machineFile(t.dataDir, w.environment.id, 'requests', today);
    await expect
      .poll(() => existsSync(errors) && existsSync(requests) && readFileSync(requests, 'utf8').includes('/leak/'), {
        timeout: 20_000,
      })
      .toBe(true);
    expect(readFileSync(errors, 'utf8')).toContain('token=[secret]');
    expect(readFileSync(requests, 'utf8')).toContain('/leak/[secret]');
    expectNoLeak(readFileSync(errors, 'utf8') + readFileSync(requests, 'utf8'));
  });

  it('reach a syslog destination as [secret]', async () => {
    const tcp = await startSyslog('tcp');
    try {
      await saveSyslogDestination(owner, w.project.id, tcp);
      // the shippers re-read destinations every few seconds: keep leaking until a stderr line goes to syslog
      const msg = await requestUntilMessage(
        tcp,
        (m) => m.includes('token='),
        () => get('/leak/again'),
        { timeoutMs: 30_000, intervalMs: 500 },
      );
      expect(msg).toContain('token=[secret] auth=[secret] db=[secret] db64=[secret]');
      expectNoLeak(tcp.messages.join('\n'));
    } finally {
      await tcp.stop();
    }
  });
});
