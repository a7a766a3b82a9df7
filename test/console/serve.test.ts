import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../system/config';
import { useTestContext } from '../helpers/context';
import { ensureConsoleBuilt } from '../helpers/console';

const HTML = { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' };

const NAME = 'Acme <Hosting> & "Co"';

describe('the web console at /', () => {
  const t = useTestContext({ env: { CONSOLE_NAME: NAME } });
  beforeAll(() => ensureConsoleBuilt());
  const get = (path: string, headers: Record<string, string> = HTML) => fetch(t.baseUrl + path, { headers });

  it('answers index.html, not cached, with a policy that loads nothing from another origin', async () => {
    const res = await get('/');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/text\/html/);
    expect(res.headers.get('cache-control')).toBe('no-cache');
    expect(res.headers.get('content-security-policy')).toMatch(/default-src 'self'/);
    const html = await res.text();
    expect(html).toMatch(/<script type="module" crossorigin src="\/assets\/index-[\w-]+\.js">/);
    expect(html).not.toMatch(/https?:\/\//);
  });

  it("names the console (CONSOLE_NAME) in index.html's title and meta, as text; the default is Hosting Console", async () => {
    const html = await (await get('/environments/8c0e7a36-0d2e-4e0a-9d53-1b2b1f9f5a11')).text();
    const escaped = 'Acme &lt;Hosting&gt; &amp; &quot;Co&quot;';
    expect(html).toContain(`<title>${escaped}</title>`);
    expect(html).toContain(`<meta name="console-name" content="${escaped}" />`);
    expect(html.match(/<title>/g)).toHaveLength(1);
    expect(html.match(/name="console-name"/g)).toHaveLength(1);
    expect(loadConfig({}).consoleName).toBe('Hosting Console');
    expect(loadConfig({ CONSOLE_NAME: '  ' }).consoleName).toBe('Hosting Console');
  });

  it('serves the hashed files cached for a year, immutable', async () => {
    const html = await (await get('/')).text();
    const script = /src="(\/assets\/[^"]+\.js)"/.exec(html)![1];
    const res = await get(script, { accept: '*/*' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/javascript/);
    expect(res.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    const dist = join(t.config.consoleDir, 'assets');
    const file = readdirSync(dist).find((f) => `/assets/${f}` === script)!;
    expect(await res.text()).toBe(readFileSync(join(dist, file), 'utf8'));
  });

  it('answers the deep links of CONTRACT with index.html (a reload keeps the page)', async () => {
    const index = await (await get('/')).text();
    for (const path of ['/sign-in', '/environments/8c0e7a36-0d2e-4e0a-9d53-1b2b1f9f5a11/domains', '/account/tokens']) {
      const res = await get(path);
      expect(res.status, path).toBe(200);
      expect(await res.text(), path).toBe(index);
    }
  });

  it("keeps the API's JSON 404 under /api/, for HTML too, and for non-HTML requests elsewhere", async () => {
    for (const [path, headers] of [
      ['/api/vc/v1/no-such-thing', HTML],
      ['/api/other', HTML],
      ['/no-such-thing', { accept: 'application/json' }],
      ['/assets/no-such-file.js', { accept: '*/*' }],
    ] as const) {
      const res = await get(path, headers);
      expect(res.status, path).toBe(404);
      expect(res.headers.get('content-type'), path).toMatch(/application\/json/);
      expect((await res.json()).error.code, path).toBe('not_found');
    }
  });

  it('serves no file outside its folder', async () => {
    for (const path of ['/assets/..%2F..%2Fpackage.json', '/%2e%2e/package.json', '/assets/%2e%2e/index.html']) {
      const res = await get(path, { accept: '*/*' });
      expect(res.status, path).toBe(404);
      expect(await res.text(), path).not.toContain('"name": "vc-console"');
    }
  });

  it("keeps the command line's approval page", async () => {
    const res = await get('/api/vc/v1/cli/verify');
    expect(res.status).toBe(200);
    expect(await res.text()).toMatch(/sign/i);
  });
});
