/**
 * One command (or several, `;`-separated) on HAProxy's runtime API (the admin stats socket, or the master's):
 * connects, writes, reads the whole answer until HAProxy closes. Non-interactive: one exchange per connection.
 *
 * HAProxy ends every answer with an empty line, so a command that succeeds silently (`add acl`, `commit map`,
 * `set server ... state ready`) still answers "\n". A connection closed with no byte at all was never answered
 * (HAProxy dropped it: its CLI timeout, a worker stopping): that is an error here, never a silent success, so a
 * change is not reported applied when HAProxy did not take it.
 */
import net from 'node:net';

export class HaproxyRuntimeError extends Error {}

/** The command without its arguments (for errors: never a payload or a pattern). */
export const verb = (command: string) => command.split(' ').slice(0, 3).join(' ');

/**
 * Runs `command` (with `payload` after `<<`, ending with an empty line, so it must hold none itself); resolves
 * with the answer, trimmed.
 */
export function runtimeCommand(
  socket: string,
  command: string,
  opts: { payload?: string; timeoutMs?: number } = {},
): Promise<string> {
  return new Promise((resolve, reject) => {
    const c = net.createConnection(socket);
    let answer = '';
    let received = false;
    c.setEncoding('utf8');
    c.setTimeout(opts.timeoutMs ?? 10_000, () =>
      c.destroy(new HaproxyRuntimeError(`runtime API: no answer to "${verb(command)}"`)),
    );
    c.on('data', (d: string) => {
      received = true;
      answer += d;
    });
    c.on('error', reject);
    c.on('close', (hadError) => {
      if (hadError) return; // rejected by 'error'
      if (!received)
        reject(
          new HaproxyRuntimeError(`runtime API: HAProxy closed the connection without answering "${verb(command)}"`),
        );
      else resolve(answer.trim());
    });
    c.on('connect', () => {
      const body =
        opts.payload === undefined
          ? ''
          : ` <<\n${opts.payload
              .replace(/\r/g, '')
              .replace(/\n{2,}/g, '\n')
              .trim()}\n`;
      c.end(`${command}${body}\n`);
    });
  });
}
