/**
 * One host's provider in a process of its own (a child of a test): HOST_NAME, SANDBOX_NETWORK and DATA_DIR
 * come from its environment, as a host agent's do, and it does what the test asks over IPC. Several of
 * them on this machine are agents of several hosts sharing one kernel (test/host/provider/two-hosts.test.ts).
 */
import { readlinkSync } from 'node:fs';
import { removeCgroupBase } from '../../host/provider/cgroups';
import { runStep } from '../../host/provider/run-step';
import { createLocalProvider } from '../../host/provider';
import { jailAddresses, netnsName } from '../../host/provider/sandbox';
import { killStrays } from '../../host/provider/supervisor-web';
import { loadConfig } from '../../system/config';

type Request =
  | { id: number; op: 'live'; envId: string; port: number; releaseDir: string }
  | { id: number; op: 'killStrays'; envId: string }
  | { id: number; op: 'retire'; envId: string; port: number }
  | { id: number; op: 'connect'; envId: string; port: number; to: string; toPort: number }
  | { id: number; op: 'stop' };

// the provider a worker makes, from the settings a host agent has
const config = loadConfig(process.env);
const provider = createLocalProvider({
  config,
  // SERVICES_HOST: where the gateway's services port goes (an address, as the worker resolves it)
  services: { port: Number(process.env.SERVICES_PORT) || null, trusting: null, target: config.servicesHost },
  supervisor: { stopGraceMs: 1000, restartBackoff: { initialMs: 100 } },
});
const { supervisor } = provider;

async function handle(req: Request): Promise<unknown> {
  switch (req.op) {
    case 'live': {
      const r = await supervisor.goLive({
        envId: req.envId,
        port: req.port,
        releaseId: 'r1',
        releaseDir: req.releaseDir,
        manifest: { build: [], deploy: [], web: 'node server.js', health: '/healthz' },
        env: { PATH: process.env.PATH, HOST_NAME: process.env.HOST_NAME },
        healthTimeoutMs: 20_000,
        limits: { cpu: 1, memoryMb: 256 },
      });
      if (!r.ok) throw new Error(r.message);
      const pid = supervisor.status(req.envId)?.pid ?? null;
      return {
        internalPort: r.internalPort,
        pid,
        netns: netnsName(req.port),
        address: jailAddresses(req.port).env,
        // the network namespace the instance runs in, as the kernel names it
        netnsOfPid: pid ? readlinkSync(`/proc/${pid}/ns/net`) : null,
      };
    }
    case 'killStrays': {
      // what runs in the environment's web cgroups beside this agent's own instances (as a worker's restore does)
      const own = (supervisor.status(req.envId)?.instances ?? []).map((i) => i.pid);
      return killStrays(
        req.envId,
        own.filter((p): p is number => p !== null),
        1000,
      );
    }
    case 'retire':
      await supervisor.retire(req.envId, req.port);
      return null;
    case 'connect': {
      // from inside the environment's sandbox: a TCP connection, and what became of it
      const lines: string[] = [];
      const js = `require('net').connect(${req.toPort}, '${req.to}').on('connect', () => { console.log('connected'); process.exit(0); }).on('error', (e) => { console.log(e.code); process.exit(1); }); setTimeout(() => { console.log('timeout'); process.exit(1); }, 3000);`;
      const jail = await provider.openJail(req.envId, req.port);
      await runStep({
        command: `node -e "${js}"`,
        cwd: jail.home,
        env: { PATH: process.env.PATH },
        timeoutMs: 20_000,
        jail,
        onLine: (_s, l) => lines.push(l),
      });
      return lines.join('\n');
    }
    case 'stop':
      await supervisor.stopAll();
      removeCgroupBase();
      return null;
  }
}

process.on('message', (req: Request) => {
  handle(req).then(
    (result) => process.send?.({ id: req.id, result }),
    (err: Error) => process.send?.({ id: req.id, error: err.message }),
  );
});
process.send?.({ ready: true });
