import { Client, Connection, defaultGrpcRetryOptions, makeGrpcRetryInterceptor } from '@temporalio/client';
import type { TestContext } from './context';
import { freePort } from './ports';

/**
 * Runs `fn` while the API's Temporal client talks to a server that is not there: a real client on a port nothing
 * listens on, giving up after two tries (the product's client tries ten times, ~19 s), then puts the real one back.
 */
export async function whileTemporalUnreachable<T>(t: TestContext, fn: () => Promise<T>): Promise<T> {
  const connection = await Connection.lazy({
    address: `127.0.0.1:${await freePort()}`,
    connectTimeout: '1s',
    interceptors: [makeGrpcRetryInterceptor(defaultGrpcRetryOptions({ maxAttempts: 2 }))],
  });
  const temporal = t.deps.temporal;
  t.deps.temporal = new Client({ connection });
  try {
    return await fn();
  } finally {
    t.deps.temporal = temporal;
    await connection.close().catch(() => undefined);
  }
}
