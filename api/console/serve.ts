import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Middleware } from 'koa';
import send from 'koa-send';
import { API_PREFIX } from '../lib/paths';
import { escapeHtml } from '../../system/html';

const YEAR_MS = 365 * 24 * 3600 * 1000;

/**
 * The web console's answers (CONTRACT "The web console"): the built files of console/dist at `/`.
 * Hashed files under /assets/ are cached for a year (immutable); index.html is not cached; a GET that
 * asks for HTML anywhere outside the API answers index.html (the SPA's deep links survive a reload).
 * Everything under the API prefix, and what is neither a file nor an HTML page, goes on to the API
 * (its JSON 404 stays).
 */
export function serveConsole(dir: string, name = 'Hosting Console'): Middleware {
  const index = join(dir, 'index.html');
  const named = namedIndex(index, name);
  const isFile = (rel: string) => {
    try {
      return statSync(join(dir, rel)).isFile();
    } catch {
      return false;
    }
  };
  return async (ctx, next) => {
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') return next();
    if (ctx.path === API_PREFIX || ctx.path.startsWith(`${API_PREFIX}/`) || ctx.path.startsWith('/api/')) return next();
    if (ctx.path === '/metrics') return next();
    const rel = decodeSafe(ctx.path);
    if (rel === undefined) return next();
    if (rel.startsWith('/assets/') && isFile(rel)) {
      await send(ctx, rel, { root: dir, maxage: YEAR_MS, immutable: true, gzip: false, brotli: false });
      ctx.set('Cache-Control', 'public, max-age=31536000, immutable');
      return;
    }
    if (rel !== '/' && rel !== '/index.html' && !rel.startsWith('/assets/') && isFile(rel)) {
      await send(ctx, rel, { root: dir, gzip: false, brotli: false });
      ctx.set('Cache-Control', 'no-cache');
      return;
    }
    if (!ctx.accepts('html') || ctx.accepts('json', 'html') === 'json') return next();
    if (!existsSync(index)) {
      ctx.status = 503;
      ctx.type = 'text/plain; charset=utf-8';
      ctx.set('Cache-Control', 'no-store');
      ctx.body = 'The web console is not built: `npm start` builds it (or run `npm run build:console`).\n';
      return;
    }
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = named();
    ctx.set('Cache-Control', 'no-cache');
    ctx.set(
      'Content-Security-Policy',
      "default-src 'self'; connect-src 'self'; img-src 'self' data: blob:; style-src 'self'; script-src 'self'; " +
        "object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'",
    );
    ctx.set('Referrer-Policy', 'same-origin');
  };
}

/**
 * index.html with the console's name (CONSOLE_NAME) as its title and `<meta name="console-name">`, read
 * again when the file changes (a rebuild while the API runs).
 */
function namedIndex(file: string, name: string): () => string {
  let cached: { mtime: number; html: string } | undefined;
  const text = escapeHtml(name);
  return () => {
    const mtime = statSync(file).mtimeMs;
    if (cached?.mtime !== mtime) {
      const html = readFileSync(file, 'utf8')
        .replace(/<title>[^<]*<\/title>/, () => `<title>${text}</title>`)
        .replace(/<meta name="console-name"[^>]*>\s*/, '')
        .replace('</title>', () => `</title>\n    <meta name="console-name" content="${text}" />`);
      cached = { mtime, html };
    }
    return cached.html;
  };
}

function decodeSafe(path: string): string | undefined {
  try {
    const p = decodeURIComponent(path);
    return p.includes('\0') || p.split('/').includes('..') ? undefined : p;
  } catch {
    return undefined;
  }
}
