/** The host agent's settings (system/host-config.ts): what each accepts, its default, and what a mistake says. */
import { availableParallelism, cpus, totalmem } from 'node:os';
import { describe, expect, it } from 'vitest';
import { hostTaskQueue, loadConfig } from '../../system/config';

describe('host settings', () => {
  it('default to 127.0.0.1, 30000-30999, 30 s and what the machine has', () => {
    const c = loadConfig({});
    expect(c.hostAddress).toBe('127.0.0.1');
    expect(c.instancePorts).toEqual({ from: 30000, to: 30999 });
    expect(c.hostLostSeconds).toBe(30);
    expect(c.hostCapacity.cpu).toBe(cpus().length);
    expect(c.hostCapacity.memory_mb).toBe(Math.floor(totalmem() / 1024 ** 2));
    expect(c.hostCapacity.disk_gb).toBeGreaterThan(0);
  });

  it('give HAProxy one thread less than the cores, at least one (EDGE_THREADS to set it)', () => {
    expect(loadConfig({}).edgeThreads).toBe(Math.max(1, availableParallelism() - 1));
    expect(loadConfig({ EDGE_THREADS: '3' }).edgeThreads).toBe(3);
    expect(loadConfig({ EDGE_THREADS: '0' }).edgeThreads).toBe(1);
    expect(() => loadConfig({ EDGE_THREADS: 'many' })).toThrow(/EDGE_THREADS/);
  });

  it('take HOST_CAPACITY key by key (a key left out: the machine’s), INSTANCE_PORTS, HOST_LOST_SECONDS and HOST_GRACE_SECONDS', () => {
    const c = loadConfig({
      HOST_ADDRESS: '10.0.0.12',
      HOST_CAPACITY: 'cpu=1.5, memory_mb=2048',
      INSTANCE_PORTS: '31000-31099',
      HOST_LOST_SECONDS: '3',
      HOST_GRACE_SECONDS: '7',
    });
    expect(c.hostAddress).toBe('10.0.0.12');
    expect(c.hostCapacity).toMatchObject({ cpu: 1.5, memory_mb: 2048 });
    expect(c.hostCapacity.disk_gb).toBe(loadConfig({}).hostCapacity.disk_gb);
    expect(c.instancePorts).toEqual({ from: 31000, to: 31099 });
    expect(c.hostLostSeconds).toBe(3);
    expect(c.hostGraceSeconds).toBe(7);
    expect(loadConfig({}).hostGraceSeconds).toBe(30); // CONTRACT "Hosts": HOST_LOST_SECONDS + 30 s
  });

  it('refuse a wrong value, naming the setting', () => {
    for (const capacity of ['cpu=0', 'memory_mb=1.5', 'ram=4', 'cpu=4;memory_mb=1'])
      expect(() => loadConfig({ HOST_CAPACITY: capacity })).toThrow(/HOST_CAPACITY/);
    for (const ports of ['30000', '31000-30000', '0-10', '60000-70000'])
      expect(() => loadConfig({ INSTANCE_PORTS: ports })).toThrow(/INSTANCE_PORTS/);
    for (const lost of ['0', '-1', '2.5', 'soon'])
      expect(() => loadConfig({ HOST_LOST_SECONDS: lost })).toThrow(/HOST_LOST_SECONDS/);
    for (const grace of ['0', '-1', '2.5', 'soon'])
      expect(() => loadConfig({ HOST_GRACE_SECONDS: grace })).toThrow(/HOST_GRACE_SECONDS/);
    expect(() => loadConfig({ HOST_ADDRESS: 'a b' })).toThrow(/HOST_ADDRESS/);
  });

  it("name each host's task queue after it, derived as the build queue is", () => {
    expect(hostTaskQueue('vc-console', 'web-2')).toBe('host-web-2');
    expect(hostTaskQueue('staging', 'web-2')).toBe('staging-host-web-2');
  });

  it("refuse the console's ports and INSTANCE_PORTS inside ENVIRONMENT_PORTS, naming both", () => {
    const range = { ENVIRONMENT_PORTS: '20000-20999' };
    for (const name of ['PORT', 'EDGE_PORT', 'EDGE_TLS_PORT'])
      expect(() => loadConfig({ ...range, [name]: '20500' })).toThrow(
        `${name} (20500) lies inside ENVIRONMENT_PORTS (20000-20999)`,
      );
    expect(() => loadConfig({ ...range, INSTANCE_PORTS: '20900-21099' })).toThrow(
      'INSTANCE_PORTS (20900-21099) overlaps ENVIRONMENT_PORTS (20000-20999)',
    );
    // the defaults: 8080, 8000, 8443 and 30000-30999 beside an ENVIRONMENT_PORTS over them
    expect(() => loadConfig({ ENVIRONMENT_PORTS: '30500-30599' })).toThrow(/INSTANCE_PORTS \(30000-30999\) overlaps/);
    expect(() => loadConfig({ ENVIRONMENT_PORTS: '7990-8010' })).toThrow(/EDGE_PORT \(8000\)/);
    // ranges side by side are fine
    expect(loadConfig({ ...range, EDGE_PORT: '19999', INSTANCE_PORTS: '21000-21099' }).edgePort).toBe(19999);
  });
});
