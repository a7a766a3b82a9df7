#!/usr/bin/env node
// Entry point of `npm start`, `npm run host`, `npm run hosts`, `npm run keys`, `npm test`, `npm run bench` and `npm run typecheck`.
// Installs what is missing (npm packages, the Temporal CLI), saying what it does, then runs the command.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureTemporalCli } from './temporal-cli.mjs';
import { ensurePebble } from './pebble.mjs';
import { ensureConsoleAssets } from './console-build.mjs';

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const command = process.argv[2];
const rest = process.argv.slice(3);
const say = (m) => console.error(`[${command}] ${m}`);

function ensureNodeModules() {
  const marker = join(root, 'node_modules', '.package-lock.json');
  const lock = join(root, 'package-lock.json');
  const fresh =
    existsSync(marker) &&
    existsSync(join(root, 'node_modules', '.bin', 'tsx')) &&
    (!existsSync(lock) || statSync(marker).mtimeMs >= statSync(lock).mtimeMs - 1000);
  if (fresh) return;
  // `npm install` with the lock file installs the locked versions. (Not `npm ci`: it refuses a lock
  // whose optional packages for other platforms, e.g. @swc/core-darwin-*, a registry does not carry.)
  // `--prefer-offline`: what npm's cache holds is taken from it, without asking the registry again (the lock
  // names each version and its checksum); the rest is downloaded. A clean clone on a machine that installed
  // before: 16 s against 23 s.
  say('Installing npm packages (npm install, from package-lock.json)...');
  const r = spawnSync('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline'], {
    cwd: root,
    stdio: 'inherit',
  });
  if (r.status !== 0) {
    say('npm install failed; see the output above.');
    process.exit(r.status ?? 1);
  }
}

/**
 * Tenant isolation (host/provider/sandbox.ts) needs bubblewrap, iproute2, util-linux's nsenter and
 * nftables. As root on a Debian-like Linux, the missing ones are installed with apt-get, saying so; elsewhere
 * the worker runs with reduced isolation and says so loudly.
 */
function ensureSandboxTools(extra = []) {
  if (process.platform !== 'linux' || process.getuid?.() !== 0) return;
  const onPath = (tool) => spawnSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' }).status === 0;
  const packages = [
    ['bwrap', 'bubblewrap'],
    ['nft', 'nftables'],
    ['ip', 'iproute2'],
    ['nsenter', 'util-linux'],
    // The edge's data plane and its CDN tier (edge/cdn), and the certificates of the automatic HTTPS tests.
    ['haproxy', 'haproxy'],
    ['varnishd', 'varnish'],
    ['openssl', 'openssl'],
    // The WAL archive of the services server the console runs (host/pitr.ts).
    ['pgbackrest', 'pgbackrest'],
    ...extra,
  ]
    .filter(([tool]) => !onPath(tool))
    .map(([, pkg]) => pkg);
  if (packages.length === 0) return;
  if (!onPath('apt-get')) {
    say(
      `Tenant isolation needs ${packages.join(', ')}; install them (no apt-get here). Until then the worker isolates less.`,
    );
    return;
  }
  say(`Installing ${packages.join(' ')} for tenant isolation (apt-get install -y ${packages.join(' ')})...`);
  const install = () =>
    spawnSync('apt-get', ['install', '-y', '-q', ...packages], {
      stdio: 'inherit',
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    }).status === 0;
  if (!install()) {
    spawnSync('apt-get', ['update', '-q'], { stdio: 'inherit' });
    if (!install())
      say(
        `Could not install ${packages.join(', ')}: the worker will isolate tenants less (it says how when it starts).`,
      );
  }
}

/** The web console's built files (console/dist), built when missing or older than their sources. */
function ensureConsole() {
  try {
    ensureConsoleAssets(say);
  } catch (err) {
    say(err.message);
    process.exit(1);
  }
}

function run(bin, args, env = {}) {
  // TypeScript entry points run in one node process with the tsx loader (no wrapper process), so
  // signals reach them directly and they decide the stop order.
  const [file, fileArgs] =
    bin === 'tsx' ? [process.execPath, ['--import', 'tsx', ...args]] : [join(root, 'node_modules', '.bin', bin), args];
  const child = spawn(file, fileArgs, {
    cwd: root,
    stdio: 'inherit',
    env: { ...process.env, ...env },
  });
  const forward = (sig) => child.kill(sig);
  process.on('SIGINT', forward);
  process.on('SIGTERM', forward);
  child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
}

const major = Number(process.versions.node.split('.')[0]);
if (major < 20) {
  console.error(`Node ${process.versions.node} is too old: this project needs Node 20 or newer.`);
  process.exit(1);
}

switch (command) {
  case 'typecheck':
    ensureNodeModules();
    run('tsc', ['--noEmit', '-p', 'tsconfig.json', ...rest]);
    break;
  case 'check': {
    // Formatting and lint (Biome), the types (tsc), then the OpenAPI document (Spectral, .spectral.yaml):
    // what CI checks before the tests.
    ensureNodeModules();
    say('Checking formatting and lint (biome ci)...');
    const biome = spawnSync(join(root, 'node_modules', '.bin', 'biome'), ['ci', '.'], { cwd: root, stdio: 'inherit' });
    if (biome.status !== 0) {
      say('Formatting or lint failed: `npx biome check --write .` fixes what it can.');
      process.exit(biome.status ?? 1);
    }
    say('Checking that every export is imported by another file (scripts/unused-exports.mjs)...');
    const exportsCheck = spawnSync(process.execPath, [join(root, 'scripts', 'unused-exports.mjs')], {
      cwd: root,
      stdio: 'inherit',
    });
    if (exportsCheck.status !== 0) process.exit(exportsCheck.status ?? 1);
    say('Checking that no new table is queried directly by two folders outside db/ (scripts/shared-tables.mjs)...');
    const tablesCheck = spawnSync(process.execPath, [join(root, 'scripts', 'shared-tables.mjs')], {
      cwd: root,
      stdio: 'inherit',
    });
    if (tablesCheck.status !== 0) process.exit(tablesCheck.status ?? 1);
    say("Checking the console's API client against the API (scripts/gen-console-client.mjs --check)...");
    const gen = spawnSync(
      process.execPath,
      ['--import', 'tsx', join(root, 'scripts', 'gen-console-client.mjs'), '--check'],
      { cwd: root, stdio: 'inherit' },
    );
    if (gen.status !== 0) process.exit(gen.status ?? 1);
    say("Checking the console's types (tsc -p console/tsconfig.json)...");
    const consoleTypes = spawnSync(
      join(root, 'node_modules', '.bin', 'tsc'),
      ['--noEmit', '-p', 'console/tsconfig.json'],
      {
        cwd: root,
        stdio: 'inherit',
      },
    );
    if (consoleTypes.status !== 0) process.exit(consoleTypes.status ?? 1);
    say('Checking types (tsc)...');
    const tsc = spawnSync(join(root, 'node_modules', '.bin', 'tsc'), ['--noEmit', '-p', 'tsconfig.json', ...rest], {
      cwd: root,
      stdio: 'inherit',
    });
    if (tsc.status !== 0) process.exit(tsc.status ?? 1);
    say('Linting the OpenAPI document (Spectral, spectral:oas; warnings fail)...');
    run('tsx', ['scripts/openapi-lint.ts']);
    break;
  }
  case 'test': {
    ensureNodeModules();
    // the tests also check deploy/systemd's units (systemd-analyze verify)
    ensureSandboxTools([['systemd-analyze', 'systemd']]);
    ensureConsole();
    const cli = ensureTemporalCli((m) => say(m.replace(/^\[setup\] /, '')));
    // Pebble, the test ACME CA of the automatic HTTPS tests (test/helpers/pebble.ts builds it too when missing).
    const pebble = ensurePebble((m) => say(m.replace(/^\[setup\] /, '')));
    run('vitest', ['run', ...rest], { TEMPORAL_CLI: cli, PEBBLE: pebble });
    break;
  }
  case 'bench': {
    ensureNodeModules();
    // the edge's benches load it with wrk, through HAProxy and Varnish
    ensureSandboxTools([['wrk', 'wrk']]);
    ensureConsole();
    const cli = ensureTemporalCli((m) => say(m.replace(/^\[setup\] /, '')));
    run('tsx', ['bench/index.ts', ...rest], { TEMPORAL_CLI: cli });
    break;
  }
  case 'start': {
    ensureNodeModules();
    ensureSandboxTools();
    ensureConsole();
    const env = {};
    if (!process.env.TEMPORAL_ADDRESS) env.TEMPORAL_CLI = ensureTemporalCli((m) => say(m.replace(/^\[setup\] /, '')));
    run('tsx', ['processes/start.ts', ...rest], env);
    break;
  }
  case 'host':
    // One host agent alone (processes/host.ts): the sandbox tools, not the console's assets nor Temporal.
    ensureNodeModules();
    ensureSandboxTools();
    run('tsx', ['processes/host.ts', ...rest]);
    break;
  case 'hosts':
  case 'keys': {
    // The operator's commands (processes/hosts.ts, processes/keys.ts): short, run often by a person or a script, so
    // in this process from their bundle (scripts/entry-bundles.mjs), as if node had been given the entry.
    // Node 20 reads `--env-file` anywhere before a `--` (even after the script): `hosts join --env-file PATH` reaches
    // the command behind one (package.json's script and here; processes/operator-command.ts drops it).
    ensureNodeModules();
    const entry = `processes/${command}.ts`;
    process.argv = [process.argv[0], join(root, entry), '--', ...(rest[0] === '--' ? rest.slice(1) : rest)];
    await (await import('./entry-bundles.mjs')).importEntry(root, entry);
    break;
  }
  default:
    console.error('usage: node scripts/bootstrap.mjs start|host|hosts|keys|test|bench|typecheck|check');
    process.exit(2);
}
