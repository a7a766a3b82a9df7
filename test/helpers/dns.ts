/**
 * A real DNS server on loopback (the `dns2` package, UDP) serving TXT records the test sets;
 * point DNS_SERVERS at `server` ("127.0.0.1:port").
 */
import dns2 from 'dns2';

export interface TxtServer {
  server: string;
  /** Sets the TXT values of a name (none: the name has no TXT record). */
  set(name: string, values: string[]): void;
  /** How many questions arrived. */
  questions(): number;
  close(): Promise<void>;
}

export async function startTxtServer(): Promise<TxtServer> {
  const records = new Map<string, string[]>();
  let asked = 0;
  const { Packet } = dns2;
  const server = dns2.createServer({
    udp: true,
    handle: (request, send) => {
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
      send(response);
    },
  });
  const addresses = (await server.listen({ udp: { port: 0, address: '127.0.0.1' } })) as { udp?: { port: number } };
  const port = addresses.udp?.port;
  if (!port) throw new Error('the DNS server did not listen on UDP');
  return {
    server: `127.0.0.1:${port}`,
    set: (name, values) => records.set(name.toLowerCase(), values),
    questions: () => asked,
    close: async () => {
      await server.close();
    },
  };
}
