/**
 * A real DNS server on loopback (the `dns2` package, UDP and TCP on one port) serving the TXT and A records
 * the test sets; point DNS_SERVERS (or an ACME CA's resolver, which asks over TCP) at `server`
 * ("127.0.0.1:port").
 */
import dns2 from 'dns2';
import { freePort } from './ports';

export interface TxtServer {
  server: string;
  /** Sets the TXT values of a name (none: the name has no TXT record). */
  set(name: string, values: string[]): void;
  /** Sets the IPv4 addresses of a name (none: the name has no A record). */
  setAddresses(name: string, addresses: string[]): void;
  /** How many questions arrived. */
  questions(): number;
  close(): Promise<void>;
}

export async function startTxtServer(): Promise<TxtServer> {
  const records = new Map<string, string[]>();
  const addresses = new Map<string, string[]>();
  let asked = 0;
  const { Packet } = dns2;
  const handle: Parameters<typeof dns2.createServer>[0]['handle'] = (request, send) => {
    asked++;
    const response = Packet.createResponseFromRequest(request);
    const [question] = request.questions;
    const values = records.get(question.name.toLowerCase());
    if (question.type === Packet.TYPE.TXT && values) {
      for (const data of values)
        response.answers.push({
          name: question.name,
          type: Packet.TYPE.TXT,
          class: Packet.CLASS.IN,
          ttl: 1,
          data,
        } as never);
    }
    const ips = addresses.get(question.name.toLowerCase());
    if (question.type === Packet.TYPE.A && ips) {
      for (const address of ips)
        response.answers.push({
          name: question.name,
          type: Packet.TYPE.A,
          class: Packet.CLASS.IN,
          ttl: 1,
          address,
        } as never);
    }
    send(response);
  };
  // UDP and TCP on the same port: a port free a moment ago, taken again if another process won it meanwhile.
  let server: ReturnType<typeof dns2.createServer> | undefined;
  let port = 0;
  for (let attempt = 0; !server; attempt++) {
    port = await freePort();
    const candidate = dns2.createServer({ udp: true, tcp: true, handle });
    const failed = new Promise<Error>((resolve) => candidate.once('error', resolve));
    const outcome = await Promise.race([
      candidate.listen({ udp: { port, address: '127.0.0.1' }, tcp: { port, address: '127.0.0.1' } }).then(() => null),
      failed,
    ]);
    if (!outcome) server = candidate;
    else {
      await candidate.close().catch(() => undefined);
      if (attempt >= 5) throw outcome;
    }
  }
  return {
    server: `127.0.0.1:${port}`,
    set: (name, values) => records.set(name.toLowerCase(), values),
    setAddresses: (name, ips) => addresses.set(name.toLowerCase(), ips),
    questions: () => asked,
    close: async () => {
      await server?.close();
    },
  };
}
