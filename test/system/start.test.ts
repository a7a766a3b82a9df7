import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it, inject } from 'vitest';
import { useTestContext } from '../helpers/context';
import { freePort } from '../helpers/ports';
import { killAndWait } from '../helpers/processes';

const t = useTestContext();
const root = path.resolve(__dirname, '../..');

describe('npm start (system/start.ts)', () => {
  it('says "Hosting Console is running" only once its worker is ready, and then /health is ok', async () => {
    const port = await freePort();
    const edgePort = await freePort();
    const child = spawn(process.execPath, ['--import', 'tsx', 'system/start.ts'], {
      cwd: root,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        ...process.env,
        DATABASE_URL: t.databaseUrl,
        TEMPORAL_ADDRESS: t.config.temporalAddress,
        TEMPORAL_TASK_QUEUE: `${t.config.taskQueue}-start`,
        DATA_DIR: mkdtempSync(path.join(t.dataDir, 'start-')),
        PORT: String(port),
        EDGE_PORT: String(edgePort),
        HOST: '127.0.0.1',
        BASE_URL: `http://127.0.0.1:${port}`,
        LOG_LEVEL: 'silent',
        REMINDER_SCHEDULE: 'off',
        VC_WORKFLOW_BUNDLE_PATH: inject('workflowBundlePath'),
      },
    });
    child.stderr.resume();
    try {
      let out = '';
      const running = await new Promise<{ workers: number }>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no "running" line in 120 s:\n${out}`)), 120_000);
        child.stdout.on('data', (d: Buffer) => {
          out += d.toString();
          if (out.includes('Hosting Console is running.')) {
            clearTimeout(timer);
            // At the moment it says so, the worker has written its readiness row.
            void t.deps
              .knex('worker_heartbeats')
              .count({ n: '*' })
              .first()
              .then((r) => resolve({ workers: Number(r!.n) }), reject);
          }
        });
        child.once('exit', (code) => reject(new Error(`start exited (${code}):\n${out}`)));
      });
      expect(running.workers).toBe(1);
      expect(out.indexOf('Waiting for the worker to be ready')).toBeLessThan(
        out.indexOf('Hosting Console is running.'),
      );
      const health = await fetch(`http://127.0.0.1:${port}/api/vc/v1/health`).then((r) => r.json());
      expect(health).toMatchObject({
        status: 'ok',
        components: { database: { status: 'ok' }, temporal: { status: 'ok' }, worker: { status: 'ok' } },
      });
    } finally {
      await killAndWait(child, 'SIGTERM');
    }
  }, 180_000);
});
