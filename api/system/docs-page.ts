import { escapeHtml as esc } from '../../system/html';

type Doc = ReturnType<typeof import('../lib/openapi').buildOpenApi>;

/**
 * A self-contained page (no CDN: it must work offline) listing every operation with its schemas. Its
 * empty icon keeps browsers from asking for /favicon.ico, which the console does not serve (a 404 in the console).
 */
export function renderDocsPage(doc: Doc): string {
  const rows: string[] = [];
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const [method, raw] of Object.entries(ops)) {
      const op = raw as {
        operationId: string;
        summary: string;
        security?: unknown[];
        parameters?: unknown;
        requestBody?: unknown;
        responses: Record<string, unknown>;
        'x-token-reachable'?: boolean;
        'x-recent-sign-in-minutes'?: number;
      };
      const auth = op.security?.length === 0 ? 'public' : op['x-token-reachable'] ? 'signed in or token' : 'signed in';
      rows.push(`<section id="${esc(op.operationId)}">
<h3><span class="m ${esc(method)}">${esc(method.toUpperCase())}</span> <code>${esc(path)}</code></h3>
<p>${esc(op.summary)}</p><p class="meta">${esc(op.operationId)} &middot; ${esc(auth)}${op['x-recent-sign-in-minutes'] ? ' &middot; needs a recent sign-in' : ''}</p>
${op.parameters ? `<details><summary>Parameters</summary><pre>${esc(JSON.stringify(op.parameters, null, 2))}</pre></details>` : ''}
${op.requestBody ? `<details><summary>Body</summary><pre>${esc(JSON.stringify(op.requestBody, null, 2))}</pre></details>` : ''}
<details><summary>Responses: ${esc(Object.keys(op.responses).join(', '))}</summary><pre>${esc(JSON.stringify(op.responses, null, 2))}</pre></details>
</section>`);
    }
  }
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${esc(doc.info.title)}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<style>body{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}
code,pre{font:13px ui-monospace,monospace}pre{background:#f6f6f6;padding:.5rem;overflow:auto}
.m{display:inline-block;min-width:4rem;font:600 12px ui-monospace,monospace;padding:2px 6px;border-radius:4px;background:#eee}
.get{background:#e3f2fd}.post{background:#e8f5e9}.patch{background:#fff8e1}.delete{background:#ffebee}.meta{color:#666;font-size:13px}
section{border-top:1px solid #eee;padding:.5rem 0}</style></head><body>
<h1>${esc(doc.info.title)} <small>${esc(doc.info.version)}</small></h1>
<p>${esc(doc.info.description)}</p><p>Base URL: <code>${esc(doc.servers[0].url)}</code> &middot; machine-readable: <a href="openapi.json">openapi.json</a></p>
${rows.join('\n')}
</body></html>`;
}
