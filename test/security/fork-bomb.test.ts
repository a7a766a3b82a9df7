import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { useTestContext } from '../helpers/context';
import { createDeployWorld, taskLog, waitForTask } from '../helpers/deploy-fixtures';
import { sessionAgent } from '../helpers/fixtures';
import type { Agent } from '../helpers/http';
import { tenantUid } from '../../host/provider/sandbox';
import { loadPriceList } from '../../core/pricing';
import { createEnvironmentMachines } from '../../api/machines/service';

/**
 * Issue 16, item 7, as a tenant would do it: its web process forks 1000 children that stay alive. Its
 * server's plan (the default, `small`) has `max_processes` (CONTRACT "Machines"), set as `pids.max` of the
 * web process's cgroup: forks past it fail, and this host never sees more processes of the environment's
 * uid than that. On code without a pids limit, all 1000 start.
 */
const t = useTestContext({ worker: true });
let w: Awaited<ReturnType<typeof createDeployWorld>>;
let owner: Agent;

const APP = `
const http = require('node:http');
const { spawn } = require('node:child_process');
const kids = [];
http.createServer((req, res) => {
  const u = new URL(req.url, 'http://x');
  if (u.pathname === '/healthz') return res.end('ok');
  if (u.pathname === '/fork') {
    let started = 0, refused = 0;
    const errors = new Set();
    for (let i = 0; i < Number(u.searchParams.get('n')); i++) {
      try {
        const c = spawn('sleep', ['300'], { stdio: 'ignore' });
        c.on('error', (e) => errors.add(e.code));
        if (c.pid) { started++; kids.push(c); } else refused++;
      } catch (e) { refused++; errors.add(e.code); }
    }
    return setTimeout(() => res.end(JSON.stringify({ started, refused, errors: [...errors] })), 500);
  }
  if (u.pathname === '/reap') { for (const c of kids.splice(0)) c.kill('SIGKILL'); return res.end('reaped'); }
  res.end('up');
}).listen(Number(process.env.PORT), '127.0.0.1');
`;

async function app(p: string): Promise<{ status: number; text: string }> {
  const res = await fetch(`http://127.0.0.1:${w.environment.port}${p}`);
  return { status: res.status, text: (await res.text()).trim() };
}

/** Processes (and threads: pids.max counts both) this host runs as the environment's uid. */
function hostTasksOf(uid: number): number {
  let n = 0;
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      const status = readFileSync(`/proc/${pid}/status`, 'utf8');
      if (Number(/^Uid:\s+(\d+)/m.exec(status)?.[1]) !== uid) continue;
      n += Number(/^Threads:\s+(\d+)/m.exec(status)?.[1] ?? 1);
    } catch {
      // gone meanwhile
    }
  }
  return n;
}

beforeAll(async () => {
  w = await createDeployWorld(t);
  // its web server on the price list's default plan, as every environment the API creates has
  await t.deps.knex.transaction((trx) => createEnvironmentMachines(trx, t.deps, w.environment));
  writeFileSync(join(w.repo.dir, 'server.js'), APP);
  writeFileSync(
    join(w.repo.dir, 'service.yaml'),
    ['build: []', 'web: node server.js', 'health: /healthz', ''].join('\n'),
  );
  execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', 'commit', '-qam', 'fork app'], {
    cwd: w.repo.dir,
  });
  owner = await sessionAgent(t, w.owner);
  const res = await owner.post(`/environments/${w.environment.id}/deploy`, {});
  expect(res.status, res.text).toBe(202);
  const task = await waitForTask(t, owner, res.body.id, { timeoutMs: 180_000 });
  expect(task.status, `${task.error ?? ''}\n${await taskLog(t, owner, task.id)}`).toBe('succeeded');
}, 240_000);

describe('a web process forks 1000 children that stay alive', () => {
  it("forks past its plan's max_processes fail; the host sees no more of the environment's uid than that", async () => {
    const server = (await owner.get(`/servers?team=${w.team.id}`)).body.data.find(
      (s: { environment_id: string; role: string }) => s.environment_id === w.environment.id && s.role === 'web',
    );
    const limit = loadPriceList(t.config).plans.find((p) => p.id === server.plan)!.max_processes!;
    expect(limit).toBeLessThanOrEqual(512);
    try {
      const forked = await app('/fork?n=1000');
      expect(forked.status).toBe(200);
      const r = JSON.parse(forked.text) as { started: number; refused: number; errors: string[] };
      expect(r.started + r.refused).toBe(1000);
      expect(r.started).toBeLessThan(limit);
      expect(r.refused).toBeGreaterThan(1000 - limit);
      expect(r.errors).toContain('EAGAIN');
      expect(hostTasksOf(tenantUid(w.environment.port))).toBeLessThanOrEqual(limit);
      // the web process itself still serves
      expect(await app('/')).toEqual({ status: 200, text: 'up' });
    } finally {
      await app('/reap').catch(() => undefined);
    }
  });
});
