/**
 * Where an environment's files live on this host: DATA_DIR/environments/<id> (releases, home, volume, the web
 * process's logs). Read by the provider (host/provider/sandbox.ts) and by the log shipper's error tail.
 */
import path from 'node:path';

/**
 * A path segment from an id or a name: a letter or digit, then letters, digits, '.', '_' or '-' (128 at most);
 * anything else throws.
 */
export function safeSegment(value: string, what: string): string {
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/.test(value)) throw new Error(`invalid ${what}: ${JSON.stringify(value)}`);
  return value;
}

export function environmentDir(dataDir: string, envId: string): string {
  return path.join(path.resolve(dataDir), 'environments', safeSegment(envId, 'environment id'));
}

/** The web processes' error output (a file the provider opens, the log shipper's error tail reads). */
export function webErrorLogPath(dataDir: string, envId: string): string {
  return path.join(environmentDir(dataDir, envId), 'web.err.log');
}
