// Lints the OpenAPI document with Spectral (`.spectral.yaml`: spectral:oas), built in-process from the route
// table (no server), and fails on any finding, warnings included. Run by `npm run check`.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildOpenApi } from '../api/lib/openapi';
import { allRoutes } from '../api/routes';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

export interface SpectralFinding {
  code: string;
  message: string;
  path: string[];
  severity: number;
}

/** The document `GET /openapi.json` serves, built without a server. */
export function openApiDocument() {
  return buildOpenApi(allRoutes(), 'http://localhost:8080');
}

/** Writes the document to a temp file and runs Spectral on it; `json` returns the findings instead of printing. */
export function lintOpenApi(
  doc: unknown = openApiDocument(),
  format: 'json' | 'stylish' = 'json',
): { status: number; findings: SpectralFinding[] } {
  const dir = mkdtempSync(join(tmpdir(), 'vc-openapi-'));
  try {
    const file = join(dir, 'openapi.json');
    writeFileSync(file, JSON.stringify(doc, null, 2));
    const results = join(dir, 'findings.json');
    const args = ['lint', file, '--ruleset', join(root, '.spectral.yaml'), '--fail-severity', 'hint'];
    if (format === 'json') args.push('--format', 'json', '--output', results);
    const run = spawnSync(join(root, 'node_modules', '.bin', 'spectral'), args, {
      cwd: root,
      encoding: 'utf8',
      stdio: format === 'json' ? 'pipe' : 'inherit',
    });
    if (run.error) throw run.error;
    const findings = format === 'json' ? (JSON.parse(readFileSync(results, 'utf8')) as SpectralFinding[]) : [];
    return { status: run.status ?? 1, findings };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const { status } = lintOpenApi(openApiDocument(), 'stylish');
  process.exit(status);
}
