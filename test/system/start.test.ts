import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { describe, expect, it, inject } from 'vitest';
import { freePort } from '../helpers/ports';
import { killAndWait, processesMentioning } from '../helpers/processes';
import { testPortSlot } from '../helpers/test-workers';

const root = path.resolve(__dirname, '../..');

// npm start's own process (processes/start.ts) on embedded defaults: its embedded PostgreSQL (listening for hosts on
// CONTROL_PLANE_BIND too), the tests' Temporal.
describe('npm start (processes/start.ts)', () => {
  it('says "Hosting Console is running" only once its worker is ready; Ctrl-C stops everything in order, PostgreSQL last', async () => {
    const port = await freePort();
    const edgePort = await freePort();
    const dataDir = mkdtempSync(path.join(inject('runDir'), 'start-'));
    chmodSync(dataDir, 0o711);
    const pgPort = await freePort();
    // where hosts reach the embedded PostgreSQL: an address of this machine's loopback but 127.0.0.1
    const bind = `127.0.${10 + testPortSlot()}.1`;
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      EMBEDDED_POSTGRES_PORT: String(pgPort),
      CONTROL_PLANE_BIND: bind,
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TEMPORAL_TASK_QUEUE: `start-${path.basename(dataDir)}`,
      DATA_DIR: dataDir,
      PORT: String(port),
      EDGE_PORT: String(edgePort),
      EDGE_TLS_PORT: String(await freePort()),
      HOST: '127.0.0.1',
      BASE_URL: `http://127.0.0.1:${port}`,
      LOG_LEVEL: 'warn',
      REMINDER_SCHEDULE: 'off',
    };
    delete env.DATABASE_URL;
    // as a user runs it: npm start bundles the workflows itself (once, ahead, for every start of its worker)
    delete env.VC_WORKFLOW_BUNDLE_PATH;
    delete env.SERVICES_DATABASE_URL;
    const child = spawn(process.execPath, ['--import', 'tsx', 'processes/start.ts'], {
      cwd: root,
      detached: true, // a process group of its own, as a terminal's foreground job
      stdio: ['ignore', 'pipe', 'pipe'],
      env,
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      out += d.toString();
    });
    try {
      const health = await new Promise<{
        processes: Array<{ name: string }>;
        settings: { services: { status: string } };
      }>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no "running" line in 180 s:\n${out}`)), 180_000);
        const check = () => {
          if (!out.includes('Hosting Console is running.')) return;
          clearTimeout(timer);
          child.stdout.off('data', check);
          // at the moment it says so, the worker has written its readiness row
          fetch(`http://127.0.0.1:${port}/api/vc/v1/health`).then((r) => resolve(r.json()), reject);
        };
        child.stdout.on('data', check);
        child.once('exit', (code) => reject(new Error(`start exited (${code}):\n${out}`)));
      });
      const waiting = out.indexOf('Starting the worker process and waiting for it to be ready');
      expect(waiting).toBeGreaterThan(0);
      expect(waiting).toBeLessThan(out.indexOf('Hosting Console is running.'));
      expect(health).toMatchObject({
        status: 'ok',
        components: { database: { status: 'ok' }, temporal: { status: 'ok' }, worker: { status: 'ok', ready: 1 } },
      });
      expect(health.processes.map((p: { name: string }) => p.name)).toEqual([
        'postgres',
        'shipper',
        'edge',
        'worker',
        'api',
      ]);
      // the workflows were bundled once, ahead, into the run directory, and the worker was given that file
      const bundle = path.join(dataDir, 'run', 'workflow-bundle.js');
      expect(statSync(bundle).size).toBeGreaterThan(100_000);
      const workerPid = (health.processes as Array<{ name: string; pid: number }>).find(
        (p) => p.name === 'worker',
      )!.pid;
      expect(readFileSync(`/proc/${workerPid}/environ`, 'utf8').split('\0')).toContain(
        `VC_WORKFLOW_BUNDLE_PATH=${bundle}`,
      );
      expect(out).not.toContain('Could not bundle');
      // the embedded server demands a password: nothing to change
      expect(health.settings.services.status).toBe('ok');
      expect(out).not.toContain('To change:');
      // it listens for hosts on CONTROL_PLANE_BIND too, with the password
      const password = readFileSync(path.join(dataDir, 'secrets', 'postgres-password'), 'utf8').trim();
      const remote = new pg.Client({ host: bind, port: pgPort, user: 'postgres', password, database: 'vc_console' });
      await remote.connect();
      try {
        expect((await remote.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
      } finally {
        await remote.end();
      }
      const wrong = new pg.Client({
        host: bind,
        port: pgPort,
        user: 'postgres',
        password: 'wrong',
        database: 'vc_console',
      });
      await expect(wrong.connect()).rejects.toMatchObject({ code: '28P01' });

      const mark = out.length;
      const exited = new Promise<number | null>((r) => child.once('close', (code: number | null) => r(code)));
      process.kill(-child.pid!, 'SIGINT'); // what a terminal's Ctrl-C does: the whole foreground group
      expect(await Promise.race([exited, new Promise((r) => setTimeout(() => r('still running'), 120_000))])).toBe(0);
      const tail = out.slice(mark);
      const order = ['api', 'edge', 'worker', 'postgres'].map((n) => tail.indexOf(`[start] Stopped the ${n} process`));
      expect(
        order.every((i) => i >= 0),
        tail,
      ).toBe(true);
      expect([...order].sort((a, b) => a - b)).toEqual(order);
      expect(tail).not.toMatch(/terminating connection due to administrator command|Acquire connection error|\n\s+at /);
      expect(tail).not.toContain('before its turn to stop');
      expect(processesMentioning(dataDir)).toEqual([]);
    } finally {
      await killAndWait(child, 'SIGKILL');
      for (const p of processesMentioning(dataDir)) process.kill(Number(p.split(' ')[0]), 'SIGKILL');
    }
  }, 300_000);
});
