/**
 * One command (or several, `;`-separated) on HAProxy's runtime API (the admin stats socket): connects,
 * writes, reads the whole answer until HAProxy closes. Used by the password map; the data plane's own
 * runtime client may take its place.
 */
import net from 'node:net';

export function runtimeCommand(socket: string, command: string, timeoutMs = 5000): Promise<string> {
  return new Promise((resolve, reject) => {
    const c = net.createConnection(socket);
    let out = '';
    c.setTimeout(timeoutMs, () => c.destroy(new Error(`runtime API: no answer to "${command.split(' ')[0]}"`)));
    c.on('connect', () => c.end(`${command}\n`));
    c.on('data', (d) => (out += d.toString('utf8')));
    c.on('error', reject);
    c.on('close', () => resolve(out));
  });
}
