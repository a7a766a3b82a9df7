// The floors of the request log shipper's sends and machine file (bench/edge.ts, bench/edge/shipper.ts), each in
// this process of its own so that its CPU time is its own:
// - `udp <port> <count> <bytes>` sends `count` datagrams of `bytes` bytes from Node's dgram (a connected socket, a
//   wait every 64 as logs/send.ts does);
// - `http <port> <lines> <bytes per line> <batch>` POSTs the same lines in batches of `batch` on one kept-alive
//   connection, as the shipper does (logs/send.ts);
// - `file <path> <lines> <bytes per line> <batch>` appends the same lines to a file (removed after) in writes of
//   `batch` lines, as the shipper writes its machine file at each flush (logs/machine-files.ts).
// It answers with its CPU time (user + system, microseconds) over the loop.
const dgram = require('node:dgram');
const fs = require('node:fs');
const http = require('node:http');

const [kind, target, ...numbers] = process.argv.slice(2);
const [count, bytes, batch] = numbers.map(Number);
const port = Number(target);

function file() {
  const fd = fs.openSync(target, 'a', 0o600);
  const body = Buffer.alloc(bytes * batch, 'x');
  for (let written = 0; written < count; written += batch)
    fs.writeSync(fd, body, 0, Math.min(batch, count - written) * bytes);
  fs.closeSync(fd);
  fs.rmSync(target, { force: true });
}

async function udp() {
  const socket = dgram.createSocket('udp4');
  await new Promise((r) => socket.connect(port, '127.0.0.1', r));
  const message = Buffer.alloc(bytes, 'x');
  for (let i = 0; i < count; i += 64) {
    const n = Math.min(64, count - i);
    await new Promise((resolve, reject) => {
      for (let k = 0; k < n - 1; k++) socket.send(message);
      socket.send(message, (err) => (err ? reject(err) : resolve()));
    });
  }
  socket.close();
}

async function post() {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const body = Buffer.alloc(bytes * batch, 'x');
  for (let sent = 0; sent < count; sent += batch) {
    const size = Math.min(batch, count - sent) * bytes;
    await new Promise((resolve, reject) => {
      const req = http.request(
        { host: '127.0.0.1', port, path: '/ingest', method: 'POST', agent, headers: { 'content-type': 'application/x-ndjson' } },
        (res) => {
          res.resume();
          res.on('end', resolve);
        },
      );
      req.on('error', reject);
      req.end(body.subarray(0, size));
    });
  }
  agent.destroy();
}

(async () => {
  const before = process.cpuUsage();
  if (kind === 'file') file();
  else await (kind === 'udp' ? udp() : post());
  const used = process.cpuUsage(before);
  process.stdout.write(`${used.user + used.system}\n`);
})();
