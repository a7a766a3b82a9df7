/**
 * The data plane's page, map and ACL files (edge/haproxy/files.ts, used by the control plane's writeFiles): a
 * file the model no longer has is removed from disk and forgotten, so a project that edits its maintenance
 * page many times leaves neither old pages on disk nor their contents in the control plane's memory; files a
 * previous control plane left are removed at the first write; nothing else in the directory is touched.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DataPlaneFiles } from '../../edge/haproxy/files';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'vc-haproxy-files-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const ls = (sub: string) => (existsSync(join(dir, sub)) ? readdirSync(join(dir, sub)).sort() : []);
const model = (entries: Record<string, string>) => new Map(Object.entries(entries));
/** What the control plane does with each model: write, then prune what the model does not have. */
const apply = (files: DataPlaneFiles, next: Map<string, string>) => {
  const written = files.write(next);
  const removed = files.prune(next);
  return { written, removed };
};

describe('the data plane files', () => {
  it('an edited page replaces the old one on disk and in memory; maps and ACLs dropped from the model go too', () => {
    const files = new DataPlaneFiles(dir);
    const base = { 'maps/ports.map': '8001 e1\n', 'pages/maintenance-default.html': 'default' };
    expect(
      apply(files, model({ ...base, 'pages/maintenance-a.html': 'A', 'acls/blocked-p1.acl': '10.0.0.1\n' })),
    ).toEqual({
      written: ['maps/ports.map', 'pages/maintenance-default.html', 'pages/maintenance-a.html', 'acls/blocked-p1.acl'],
      removed: [],
    });

    // 20 edits of the page: one page file at a time, and the memo holds the current model's files only
    for (let i = 0; i < 20; i++) {
      const r = apply(files, model({ ...base, [`pages/maintenance-${i}.html`]: `page ${i}` }));
      expect(r.written).toEqual([`pages/maintenance-${i}.html`]);
      expect(r.removed).toEqual(
        i === 0 ? ['pages/maintenance-a.html', 'acls/blocked-p1.acl'] : [`pages/maintenance-${i - 1}.html`],
      );
      expect(ls('pages')).toEqual([`maintenance-${i}.html`, 'maintenance-default.html']);
      expect(files.files()).toEqual([
        'maps/ports.map',
        `pages/maintenance-${i}.html`,
        'pages/maintenance-default.html',
      ]);
    }
    expect(ls('acls')).toEqual([]);
    expect(ls('maps')).toEqual(['ports.map']);
    expect(readFileSync(join(dir, 'pages/maintenance-19.html'), 'utf8')).toBe('page 19');
  });

  it('a file name used again after it was removed is written again; unchanged files are not rewritten', () => {
    const files = new DataPlaneFiles(dir);
    const a = model({ 'maps/ports.map': '8001 e1\n', 'pages/maintenance-a.html': 'A' });
    const b = model({ 'maps/ports.map': '8001 e1\n', 'pages/maintenance-b.html': 'B' });
    apply(files, a);
    expect(apply(files, b)).toEqual({ written: ['pages/maintenance-b.html'], removed: ['pages/maintenance-a.html'] });
    expect(apply(files, a)).toEqual({ written: ['pages/maintenance-a.html'], removed: ['pages/maintenance-b.html'] });
    expect(readFileSync(join(dir, 'pages/maintenance-a.html'), 'utf8')).toBe('A');
    expect(apply(files, a)).toEqual({ written: [], removed: [] });
  });

  it("at the first write, a previous control plane's files the model lacks are removed; others are left alone", () => {
    for (const sub of ['pages', 'maps', 'acls']) mkdirSync(join(dir, sub));
    writeFileSync(join(dir, 'pages/maintenance-old.html'), 'old');
    writeFileSync(join(dir, 'pages/error-kept.html'), 'kept');
    writeFileSync(join(dir, 'acls/blocked-deleted-project.acl'), '10.0.0.1\n');
    writeFileSync(join(dir, 'maps/ports.map.tmp-12345'), 'half');
    writeFileSync(join(dir, 'haproxy.cfg'), 'global\n');
    writeFileSync(join(dir, 'default.pem'), 'pem');

    const files = new DataPlaneFiles(dir);
    const next = model({ 'maps/ports.map': '8001 e1\n', 'pages/error-kept.html': 'kept' });
    const { written, removed } = apply(files, next);
    // the page already on disk with the same content is not rewritten
    expect(written).toEqual(['maps/ports.map']);
    expect(removed.sort()).toEqual([
      'acls/blocked-deleted-project.acl',
      'maps/ports.map.tmp-12345',
      'pages/maintenance-old.html',
    ]);
    expect([ls('pages'), ls('maps'), ls('acls')]).toEqual([['error-kept.html'], ['ports.map'], []]);
    expect(readdirSync(dir).sort()).toEqual(['acls', 'default.pem', 'haproxy.cfg', 'maps', 'pages']);
  });
});
