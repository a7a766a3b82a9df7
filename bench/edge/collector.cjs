// The project's request log destinations for the edge benches (bench/edge/world.ts), in a process of their own
// so that none of what they receive waits on the bench's event loop (wrk runs synchronously there): an http
// collector (POST of NDJSON, its lines counted) and a syslog udp receiver (its datagrams counted, and their
// bytes, for the floor of bench/edge/floors.ts). Asked with 'counts', it answers {http, httpBytes, udp, udpBytes}.
const http = require('node:http');
const dgram = require('node:dgram');

const counts = { http: 0, httpBytes: 0, udp: 0, udpBytes: 0 };
const server = http.createServer((req, res) => {
  let lines = 0;
  req.on('data', (chunk) => {
    counts.httpBytes += chunk.length;
    for (let i = chunk.indexOf(10); i >= 0; i = chunk.indexOf(10, i + 1)) lines += 1;
  });
  req.on('end', () => {
    counts.http += lines;
    res.writeHead(204);
    res.end();
  });
});
const udp = dgram.createSocket('udp4');
udp.on('message', (m) => {
  counts.udp += 1;
  counts.udpBytes += m.length;
});
server.listen(0, '127.0.0.1', () =>
  udp.bind(0, '127.0.0.1', () => {
    try {
      udp.setRecvBufferSize(8 * 1024 * 1024); // up to net.core.rmem_max
    } catch {}
    process.send?.({ httpPort: server.address().port, udpPort: udp.address().port });
  }),
);
process.on('message', (m) => m === 'counts' && process.send?.({ counts }));
process.on('SIGTERM', () => {
  udp.close();
  server.close(() => process.exit(0));
});
