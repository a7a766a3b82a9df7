import { mkdtemp, rename, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseManifest, readManifest } from '../../../host/manifest';

describe('service.yaml', () => {
  it('accepts a valid manifest', () => {
    const r = parseManifest('build: ["npm ci"]\ndeploy:\n  - node migrate.js\nweb: node server.js\nhealth: /healthz\n');
    expect(r).toEqual({
      ok: true,
      manifest: { build: ['npm ci'], deploy: ['node migrate.js'], web: 'node server.js', health: '/healthz' },
    });
  });

  it('treats missing build and deploy as no steps', () => {
    expect(parseManifest('web: node server.js\n')).toEqual({
      ok: true,
      manifest: { build: [], deploy: [], web: 'node server.js' },
    });
    expect(parseManifest('')).toEqual({ ok: true, manifest: { build: [], deploy: [] } });
  });

  it('reports every unknown key and wrong type, each with its line', () => {
    const r = parseManifest(
      ['build: npm ci', 'deploy:', '  - ok', '  - 3', 'colour: red', 'health: healthz', 'web:'].join('\n'),
    );
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.fields).toEqual({
      build: 'expected an array of strings (line 1)',
      'deploy.1': 'expected a non-empty string (line 4)',
      colour: 'unknown key (line 5)',
      health: "expected a path starting with '/', such as /healthz (line 6)",
      web: 'expected a non-empty string (line 7)',
    });
  });

  it('reports a YAML syntax error and a document that is not a mapping under "manifest"', () => {
    const bad = parseManifest('build: [npm ci\ndeploy: []\n');
    expect(bad.ok).toBe(false);
    if (!bad.ok) expect(bad.fields.manifest).toMatch(/^invalid YAML: .*\(line \d+\)/);

    const list = parseManifest('- npm ci\n');
    expect(list).toEqual({
      ok: false,
      fields: { manifest: 'expected a mapping of build, deploy, web and health (line 1)' },
    });

    const dup = parseManifest('web: a\nweb: b\n');
    expect(dup.ok).toBe(false);
    if (!dup.ok) expect(dup.fields.manifest).toContain('(line 2)');
  });

  it('reads an absent file as an empty manifest and an invalid one as a failure', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'vc-manifest-'));
    try {
      const absent = { ok: true, manifest: { build: [], deploy: [] }, present: false };
      expect(await readManifest(dir)).toEqual({ ...absent, suggested: null });
      // a package.json with a start script is noticed (the build's log then says how to serve it), through no link
      await writeFile(path.join(dir, 'package.json'), '{"scripts": {"test": "vitest"}}');
      expect(await readManifest(dir)).toEqual({ ...absent, suggested: null });
      await writeFile(path.join(dir, 'elsewhere.json'), '{"scripts": {"start": "node server.js"}}');
      await symlink('elsewhere.json', path.join(dir, 'package.json.link'));
      await rm(path.join(dir, 'package.json'));
      await rename(path.join(dir, 'package.json.link'), path.join(dir, 'package.json'));
      expect(await readManifest(dir)).toEqual({ ...absent, suggested: null });
      await rm(path.join(dir, 'package.json'));
      await writeFile(path.join(dir, 'package.json'), '{"scripts": {"start": "node server.js"}}');
      // npm ci needs a lockfile: without one, npm install
      expect(await readManifest(dir)).toEqual({ ...absent, suggested: { build: 'npm install', web: 'npm start' } });
      await writeFile(path.join(dir, 'package-lock.json'), '{}');
      expect(await readManifest(dir)).toEqual({ ...absent, suggested: { build: 'npm ci', web: 'npm start' } });
      await writeFile(path.join(dir, 'service.yaml'), 'build: [1]\n');
      expect(await readManifest(dir)).toEqual({
        ok: false,
        fields: { 'build.0': 'expected a non-empty string (line 1)' },
        present: true,
      });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
