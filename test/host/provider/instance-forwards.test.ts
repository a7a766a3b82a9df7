/**
 * host/provider/instance-ports.ts on the real nft of this machine, in a table of a host of its own (ports 61900-61910:
 * below every test run's INSTANCE_PORTS, above the kernel's ephemeral range): a port's forward is
 * added, replaced in place when it pointed elsewhere (one transaction), and pruned with what is kept left alone.
 */
import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { configureHostIdentity, hostIdentity, type HostIdentity } from '../../../host/provider/host-identity';
import {
  forwardInstancePort,
  pruneInstanceForwards,
  unforwardInstancePort,
} from '../../../host/provider/instance-ports';

let before: HostIdentity;
let table: string;

/** The map's elements: `port -> "address:port"` of the instances forwarded to. */
function forwards(): Map<number, string> {
  const listed = JSON.parse(execFileSync('nft', ['-j', 'list', 'map', 'ip', table, 'forwards'], { encoding: 'utf8' }));
  const out = new Map<number, string>();
  for (const item of listed.nftables as { map?: { elem?: unknown[] } }[])
    for (const elem of item.map?.elem ?? []) {
      const [key, value] = elem as [{ concat: [string, number] }, { concat: [string, number] }];
      out.set(key.concat[1], `${value.concat[0]}:${value.concat[1]}`);
    }
  return out;
}

beforeAll(() => {
  // this process's host is restored after: a test worker runs other files after this one
  before = hostIdentity();
  const own = configureHostIdentity({ hostName: `fwd-test-${process.pid}`, sandboxNetwork: before.network.cidr });
  table = `vc_instances_${own.tag}`;
});

afterAll(() => {
  try {
    execFileSync('nft', ['delete', 'table', 'ip', table], { stdio: 'ignore' });
  } catch {
    // never made
  }
  configureHostIdentity({ hostName: before.name, sandboxNetwork: before.network.cidr });
});

it('adds a forward, replaces one that points elsewhere, and prunes all but what is kept', async () => {
  await forwardInstancePort('127.0.0.1', 61901, { host: '10.200.0.2', port: 40001 });
  await forwardInstancePort('127.0.0.1', 61902, { host: '10.200.0.6', port: 40002 });
  expect(forwards()).toEqual(
    new Map([
      [61901, '10.200.0.2:40001'],
      [61902, '10.200.0.6:40002'],
    ]),
  );
  // the same forward again, then the port given to another instance
  await forwardInstancePort('127.0.0.1', 61901, { host: '10.200.0.2', port: 40001 });
  await forwardInstancePort('127.0.0.1', 61901, { host: '10.200.0.10', port: 40003 });
  expect(forwards().get(61901)).toBe('10.200.0.10:40003');
  await forwardInstancePort('127.0.0.1', 61903, { host: '10.200.0.14', port: 40004 });
  expect(await pruneInstanceForwards('127.0.0.1', { from: 61900, to: 61910 }, [61902])).toEqual([61901, 61903]);
  expect(forwards()).toEqual(new Map([[61902, '10.200.0.6:40002']]));
  await unforwardInstancePort('127.0.0.1', 61902);
  await unforwardInstancePort('127.0.0.1', 61902); // absent: nothing to do
  expect(forwards().size).toBe(0);
});
