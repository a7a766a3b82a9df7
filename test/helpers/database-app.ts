/**
 * A deployed app that reads and writes a `notes` table through its DATABASE_URL: `/write?body=...` adds a
 * row, `/clear` empties the table, `/whoami` answers the role, database and URL user it reaches, `/` answers the
 * bodies in order. For tests of database services and of
 * backups, restores and resets.
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

const APP = `
const http = require('node:http');
const { execFileSync } = require('node:child_process');
const psql = (sql) => execFileSync('psql', [process.env.DATABASE_URL, '-Atc', sql], { encoding: 'utf8' }).trim();
http.createServer((req, res) => {
  const u = new URL(req.url, 'http://x');
  try {
    if (u.pathname === '/healthz') return res.end('ok');
    if (u.pathname === '/whoami') return res.end(psql('SELECT current_user || \\' \\' || current_database()') + ' ' + new URL(process.env.DATABASE_URL).username);
    if (u.pathname === '/write') psql("INSERT INTO notes (body) VALUES ('" + u.searchParams.get('body').replace(/'/g, "''") + "')");
    if (u.pathname === '/clear') psql('DELETE FROM notes');
    res.end(psql('SELECT string_agg(body, \\',\\' ORDER BY id) FROM notes'));
  } catch (e) { res.writeHead(500); res.end(String(e.stderr || e.message)); }
}).listen(Number(process.env.PORT), '127.0.0.1');
`;

interface DatabaseAppOptions {
  /** Another server.js (a test's own app on the same `notes` table). */
  server?: string;
  /** A file whose existence the build step waits for. */
  gate?: string;
  /** Deploy steps run before the one that creates the table. */
  deployFirst?: string[];
}

/** Commits the app into the repository at `dir` (its deploy step creates the table). */
export function commitDatabaseApp(dir: string, options: DatabaseAppOptions = {}): void {
  const { server = APP, gate, deployFirst = [] } = options;
  writeFileSync(join(dir, 'server.js'), server);
  writeFileSync(
    join(dir, 'service.yaml'),
    [
      `build: ${JSON.stringify(gate ? [`while [ ! -f '${gate}' ]; do sleep 0.1; done`] : [])}`,
      `deploy: ${JSON.stringify([
        ...deployFirst,
        'psql "$DATABASE_URL" -c "CREATE TABLE IF NOT EXISTS notes (id serial primary key, body text)"',
      ])}`,
      'web: node server.js',
      'health: /healthz',
      '',
    ].join('\n'),
  );
  execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', 'commit', '-qam', 'db app'], {
    cwd: dir,
  });
}

/** What the app on `port` answers at `path`. */
export async function databaseApp(port: number, path: string): Promise<{ status: number; text: string }> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`);
  return { status: res.status, text: (await res.text()).trim() };
}
