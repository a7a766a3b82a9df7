/**
 * The edge checks each configuration with the real `haproxy -c` before it starts or reloads HAProxy
 * (edge/haproxy/process.ts `validate`). A configuration HAProxy refuses fails with HAProxy's own reason: the
 * file, the line and what is wrong there (before, `-q` hid it and the error named only the command). The edge's
 * own configuration stays valid when other programs hold every port of ENVIRONMENT_PORTS.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { HaproxyProcess } from '../../edge/haproxy/process';
import { haproxyPaths } from '../../edge/haproxy/paths';
import { DEFAULT_PER_ADDRESS, renderConfig } from '../../edge/haproxy/config';
import { buildModel, mapFile } from '../../edge/haproxy/model';
import { DataPlaneFiles } from '../../edge/haproxy/files';
import { PAGES_LUA, pagesLua } from '../../edge/haproxy/pages';
import type { EdgeState } from '../../edge/state';

let dataDir: string;
beforeEach(() => {
  dataDir = mkdtempSync(join(tmpdir(), 'vc-haproxy-validate-'));
});
afterEach(() => rmSync(dataDir, { recursive: true, force: true }));

function withConfig(text: string): HaproxyProcess {
  const paths = haproxyPaths(dataDir);
  mkdirSync(paths.dir, { recursive: true });
  writeFileSync(paths.config, text);
  return new HaproxyProcess(paths);
}

const HEAD =
  'global\n  maxconn 100\ndefaults\n  mode http\n  timeout client 5s\n  timeout server 5s\n  timeout connect 1s\n';

describe("haproxy.cfg's check", () => {
  it('a configuration HAProxy refuses fails with the line and the keyword at fault', async () => {
    const haproxy = withConfig(`${HEAD}frontend f\n  bind 127.0.0.1:1\n  bogus-keyword here\n`);
    const err = (await haproxy.validate().then(
      () => null,
      (e: Error) => e,
    )) as Error;
    expect(err).toBeInstanceOf(Error);
    expect(err.message).toMatch(/^haproxy\.cfg is not valid: ALERT: /);
    expect(err.message).toContain("haproxy.cfg:10] : unknown keyword 'bogus-keyword'");
    expect(err.message).not.toContain('Command failed');
  });

  it('a configuration HAProxy takes passes', async () => {
    const haproxy = withConfig(`${HEAD}frontend f\n  bind 127.0.0.1:1\n  http-request return status 200\n`);
    await expect(haproxy.validate()).resolves.toBeUndefined();
  });

  it("the edge's configuration when other programs hold every environment port: valid, with no bind for them", async () => {
    const paths = haproxyPaths(dataDir);
    const empty: EdgeState = {
      projectOf: new Map(),
      projectRules: new Map(),
      envByPort: new Map(),
      routes: new Map(),
      domains: new Map(),
      maintenance: new Map(),
      rules: new Map(),
      challenges: new Map(),
      cdn: new Map(),
    };
    const options = {
      paths,
      host: '127.0.0.1',
      edgePort: 40_100,
      environmentPorts: { from: 40_110, to: 40_112 },
      slots: 2,
      trustProxyHops: 0,
      perAddress: DEFAULT_PER_ADDRESS,
    };
    // the model and its files as the control plane writes them (edge/control-plane.ts modelOf, writeFiles)
    const model = buildModel(empty, null, [], 2);
    const map = (name: string) => join(paths.dir, mapFile(name));
    model.pages.set(PAGES_LUA, pagesLua({ pages: map('pages'), projects: map('env-project') }));
    const files = new DataPlaneFiles(paths.dir);
    files.write(model.pages);
    files.write(model.files);
    const held = renderConfig(model, { ...options, heldPorts: [40_110, 40_111, 40_112] });
    expect(held).not.toContain('name envs');
    await expect(withConfig(held).validate()).resolves.toBeUndefined();
    const some = renderConfig(model, { ...options, heldPorts: [40_111] });
    expect(some).toContain('bind 127.0.0.1:40110,127.0.0.1:40112 name envs');
    await expect(withConfig(some).validate()).resolves.toBeUndefined();
  });
});
