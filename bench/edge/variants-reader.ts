// The request log's reader for bench/edge/variants.ts, in a process of its own: a RequestLogReader
// (logs/request-reader.ts) on the ring's socket (argv[2]), its lines counted and dropped.
import { chmodSync } from 'node:fs';
import { RequestLogReader } from '../../logs/request-reader';

let lines = 0;
const reader = await new RequestLogReader({
  socketPath: process.argv[2],
  cursorFile: `${process.argv[2]}.cursor.json`,
  sink: { pushBlock: (_env, _block, n) => void (lines += n), countDropped: () => undefined },
}).start();
// HAProxy's workers run as the data plane's user: they may connect (the directory is theirs to pass, privileges.ts)
chmodSync(process.argv[2], 0o666);
process.on('message', (m) => m === 'lines' && process.send?.({ lines }));
process.on('SIGTERM', () => reader.close().then(() => process.exit(0)));
process.send?.({ ready: true });
