/**
 * Varnish's management CLI (varnish-cli(7)) over its -T socket: the server opens with a 107 challenge, the
 * client answers `auth <sha256(challenge \n secret challenge \n)>`, then each command line gets a status and
 * a body. One connection per command: bans and health changes are rare, and no state outlives a call.
 * (varnishadm does the same, but joins its arguments unquoted; quoting a ban's strings is ours to do.)
 */
import { createHash } from 'node:crypto';
import net from 'node:net';

class VarnishAdminError extends Error {
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
  }
}

/** A word of a CLI command, quoted when it must be (varnish-cli(7) "Quoting pitfalls"). */
function cliWord(word: string): string {
  if (word !== '' && /^[\x21-\x7e]+$/.test(word) && !/["\\]/.test(word)) return word;
  const escaped = word
    .replace(/[\\"]/g, (c) => `\\${c}`)
    .replace(/[\x00-\x1f\x7f]/g, (c) => {
      const named: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };
      return named[c] ?? `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`;
    });
  return `"${escaped}"`;
}

interface Reply {
  status: number;
  body: string;
}

/** Reads CLI replies ("SSS LLLLLLLL\n" + body of L bytes + "\n") off a socket. */
function replies(socket: net.Socket): () => Promise<Reply> {
  let buf = Buffer.alloc(0);
  const waiting: Array<{ resolve: (r: Reply) => void; reject: (e: Error) => void }> = [];
  let failed: Error | null = null;
  const pump = () => {
    while (waiting.length > 0 && buf.length >= 13) {
      const head = buf.subarray(0, 13).toString('latin1');
      const status = Number(head.slice(0, 3));
      const length = Number(head.slice(4, 12));
      if (!Number.isInteger(status) || !Number.isInteger(length)) {
        failed = new VarnishAdminError(`not a Varnish CLI answer: ${JSON.stringify(head)}`);
        break;
      }
      if (buf.length < 13 + length + 1) return;
      const body = buf.subarray(13, 13 + length).toString('utf8');
      buf = buf.subarray(13 + length + 1);
      waiting.shift()!.resolve({ status, body });
    }
    if (failed) for (const w of waiting.splice(0)) w.reject(failed);
  };
  socket.on('data', (chunk: Buffer) => {
    buf = Buffer.concat([buf, chunk]);
    pump();
  });
  const fail = (err: Error) => {
    failed ??= err;
    pump();
  };
  socket.on('error', fail);
  socket.on('close', () => fail(new VarnishAdminError('the Varnish CLI closed the connection')));
  return () =>
    new Promise<Reply>((resolve, reject) => {
      waiting.push({ resolve, reject });
      pump();
    });
}

export interface AdminAddress {
  host: string;
  port: number;
  /** The -S secret file's content. */
  secret: Buffer;
}

/** Runs one command (its words quoted here) and answers its body; a status other than 200 throws. */
export function adminCommand(to: AdminAddress, words: string[], timeoutMs = 10_000): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    const socket = net.connect(to.port, to.host);
    socket.setTimeout(timeoutMs, () => socket.destroy(new VarnishAdminError(`${words[0]}: no answer from Varnish`)));
    const next = replies(socket);
    const run = async () => {
      let reply = await next();
      if (reply.status === 107) {
        const challenge = reply.body.split('\n', 1)[0];
        const digest = createHash('sha256')
          .update(`${challenge}\n`)
          .update(to.secret)
          .update(`${challenge}\n`)
          .digest('hex');
        socket.write(`auth ${digest}\n`);
        reply = await next();
      }
      if (reply.status !== 200) throw new VarnishAdminError('the Varnish CLI refused the secret', reply.status);
      socket.write(`${words.map(cliWord).join(' ')}\n`);
      reply = await next();
      if (reply.status !== 200)
        throw new VarnishAdminError(`${words[0]}: ${reply.status} ${reply.body.trim()}`, reply.status);
      return reply.body;
    };
    run().then(
      (body) => {
        socket.destroy();
        resolve(body);
      },
      (err) => {
        socket.destroy();
        reject(err);
      },
    );
  });
}
