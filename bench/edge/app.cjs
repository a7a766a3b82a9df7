// The bench's app, its own process (as a tenant's web process is): `/` a small GET; `/page` a page that
// takes what a real one does (a 5 ms query, then ~20 KB of HTML rendered) and says it may be cached.
const http = require('node:http');

function render() {
  let html = '<!doctype html><html><head><title>Catalogue</title></head><body><ul>';
  for (let i = 0; i < 400; i++) html += `<li class="item"><a href="/items/${i}">Item ${i}</a> <b>${(i * 7.5).toFixed(2)} EUR</b></li>`;
  return `${html}</ul></body></html>\n`;
}

const server = http.createServer((req, res) => {
  if (req.url === '/page') {
    setTimeout(() => {
      const body = render();
      res.writeHead(200, {
        'content-type': 'text/html; charset=utf-8',
        'content-length': Buffer.byteLength(body),
        'cache-control': 'public, max-age=600',
      });
      res.end(body);
    }, 5);
    return;
  }
  res.writeHead(200, { 'content-type': 'text/plain' });
  res.end('hello from the app\n');
});
server.keepAliveTimeout = 30_000;
server.listen(0, '127.0.0.1', () => process.send?.({ port: server.address().port }));
// The bench asks for CPU time used, to weigh each request's cost whatever else loads the host.
process.on('message', (m) => m === 'cpu' && process.send?.({ cpu: process.cpuUsage() }));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
