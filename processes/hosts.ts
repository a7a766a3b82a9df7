/**
 * `npm run hosts -- list|drain|undrain|evacuate|join` (CONTRACT "Hosts", docs/hosts.md): the operator's view of the
 * host registry, run on the control plane's machine with its settings (DATABASE_URL, else the embedded
 * server under DATA_DIR; DATA_DIR's keys).
 */
import { chmodSync, writeFileSync } from 'node:fs';
import { DEFAULT_TASK_QUEUE, hostNameOf, loadConfig } from '../system/config';
import { type Host, listHosts, setHostStatus } from '../db/queries/hosts';
import { controlPlaneSecrets, databaseUrl, operatorProgram, runCommand, withKnex } from './operator-command';
import type { Deps } from '../system/deps';

const config = loadConfig();

const mb = (n: number) => (n >= 1024 ? `${(n / 1024).toFixed(1)} GB` : `${n} MB`);

function table(hosts: Host[]): string {
  const rows = [
    [
      'NAME',
      'ADDRESS',
      'STATUS',
      'CAPACITY (cpu/memory/disk)',
      'USED (cpu/memory/disk)',
      'ENVIRONMENTS',
      'KEY',
      'HEARTBEAT',
    ],
    ...hosts.map((h) => [
      h.name,
      h.address,
      h.status,
      `${h.capacity.cpu} / ${mb(h.capacity.memory_mb)} / ${h.capacity.disk_gb} GB`,
      `${h.used.cpu} / ${mb(h.used.memory_mb)} / ${h.used.disk_gb} GB` +
        (h.held.memory_mb > 0 ? ` (+${mb(h.held.memory_mb)} held for open resizes)` : ''),
      String(h.environments),
      h.encryption_key_id ?? '-',
      h.heartbeat_at,
    ]),
  ];
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  return rows
    .map((r) =>
      r
        .map((c, i) => c.padEnd(widths[i]))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

/** A value as a POSIX shell word (also read right by systemd's EnvironmentFile). */
const quote = (v: string) => (/^[A-Za-z0-9_./:@%+=,-]*$/.test(v) ? v : `'${v.replace(/'/g, `'\\''`)}'`);

/** What a new machine needs to join as `name`: the control plane's addresses, key and release store. */
function joinEnv(name: string): Array<[string, string]> {
  const secrets = controlPlaneSecrets(config);
  // npm start's own servers, where it listens for hosts (CONTROL_PLANE_BIND; every address: still loopback here)
  const bind = config.controlPlaneBind;
  const reachable = bind === '0.0.0.0' ? '127.0.0.1' : bind;
  const env: Array<[string, string]> = [
    ['HOST_NAME', name],
    ['TEMPORAL_ADDRESS', config.temporalAddress ?? `${reachable}:${config.temporalPort}`],
    ['DATABASE_URL', config.databaseUrl ?? databaseUrl(config).replace('@127.0.0.1:', `@${reachable}:`)],
    ['ENCRYPTION_KEY_ID', secrets.encryptionKey.id],
    ['ENCRYPTION_KEY', secrets.encryptionKey.key.toString('hex')],
  ];
  // keys set aside by a rotation still open what they sealed until `npm run keys -- retire` (docs/encryption-keys.md)
  const previous = [...secrets.previousEncryptionKeys].map(([id, key]) => `${id}:${key.toString('hex')}`);
  if (previous.length) env.push(['ENCRYPTION_KEYS_PREVIOUS', previous.join(',')]);
  if (config.temporalNamespace !== 'default') env.push(['TEMPORAL_NAMESPACE', config.temporalNamespace]);
  if (config.taskQueue !== DEFAULT_TASK_QUEUE) env.push(['TEMPORAL_TASK_QUEUE', config.taskQueue]);
  if (process.env.HOST_LOST_SECONDS) env.push(['HOST_LOST_SECONDS', process.env.HOST_LOST_SECONDS]);
  // always: a host's default store would be its own DATA_DIR's, which no other host sees
  env.push(['RELEASE_STORE', config.releaseStore.location]);
  for (const key of ['S3_ENDPOINT', 'S3_REGION', 'S3_ACCESS_KEY_ID', 'S3_SECRET_ACCESS_KEY', 'S3_CA_FILE'])
    if (process.env[key]) env.push([key, process.env[key]!]);
  return env;
}

const program = operatorProgram('hosts', 'The hosts of this console (docs/hosts.md)');

program
  .command('list')
  .description("Each host's status, capacity, used, environments and encryption key")
  .option('--json', 'a JSON list of {name, address, status, capacity, used, held, environments, encryption_key_id}')
  .action(async (o: { json?: boolean }) => {
    const hosts = await withKnex(config, (knex) => listHosts(knex, config.hostLostSeconds));
    if (o.json)
      console.log(
        JSON.stringify(
          hosts.map(({ name, address, status, capacity, used, held, environments, encryption_key_id }) => ({
            name,
            address,
            status,
            capacity,
            used,
            held,
            environments,
            encryption_key_id,
          })),
          null,
          2,
        ),
      );
    else console.log(hosts.length ? table(hosts) : 'No host has joined yet (npm start registers its own machine).');
  });

/** The control plane's Deps (its database and Temporal, as npm start runs them), for the commands that start tasks. */
async function withDeps<T>(work: (deps: Deps) => Promise<T>): Promise<T> {
  // loaded here: list, undrain and join need none of it
  const { createDeps } = await import('./deps');
  const deps = await createDeps(
    {
      ...config,
      databaseUrl: databaseUrl(config),
      temporalAddress: config.temporalAddress ?? `127.0.0.1:${config.temporalPort}`,
      logLevel: 'silent',
    },
    { name: 'hosts' },
  );
  try {
    return await work(deps);
  } finally {
    await deps.close();
  }
}

program
  .command('drain <name>')
  .description('Close a host to placement and move every environment off it')
  .action(async (name: string) => {
    const { drainHost } = await import('../core/host-moves');
    const r = await withDeps((deps) => drainHost(deps, name));
    if (!r.found) throw new Error(`No host is named ${name} (npm run hosts -- list).`);
    console.log(`Host ${name} is draining: no new environment is placed on it.`);
    for (const m of r.moves)
      console.log(
        'taskId' in m
          ? `  ${m.environment}: moving (task ${m.taskId})`
          : `  ${m.environment}: not moved now (${m.refused}); drain it again once that ends`,
      );
    console.log(
      r.moves.length
        ? `It becomes drained once every environment has moved (npm run hosts -- list).`
        : `Nothing runs on it: it is drained.`,
    );
  });

program
  .command('undrain <name>')
  .description('Open a draining or drained host to placement again')
  .action(async (name: string) => {
    const found = await withKnex(config, (knex) => setHostStatus(knex, name, 'ready'));
    if (!found) throw new Error(`No host is named ${name} (npm run hosts -- list).`);
    console.log(`Host ${name} is ready: it is open to placement again.`);
  });

/** An age as people say it: 40 s, 12 min, 3 h, 2 d. */
function age(seconds: number): string {
  if (seconds < 90) return `${Math.round(seconds)} s`;
  if (seconds < 90 * 60) return `${Math.round(seconds / 60)} min`;
  if (seconds < 36 * 3600) return `${Math.round(seconds / 3600)} h`;
  return `${Math.round(seconds / 86400)} d`;
}

program
  .command('evacuate <name>')
  .description("List a lost host's environments that kept data there, with the snapshot each would restore")
  .option('--confirm', 'restore each from that snapshot onto another host, and e-mail its team what was lost')
  .action(async (name: string, o: { confirm?: boolean }) => {
    const { evacuationList, startMove } = await import('../core/host-moves');
    const list = await withKnex(config, async (knex) => {
      const host = (await listHosts(knex, config.hostLostSeconds)).find((h) => h.name === name);
      if (!host) throw new Error(`No host is named ${name} (npm run hosts -- list).`);
      return evacuationList({ knex }, name);
    });
    if (list.length === 0) console.log(`No environment of ${name} waits for an evacuation (none is host_lost).`);
    for (const e of list)
      console.log(
        `${e.environment.name} (${e.environment.environment_id}): ${
          e.snapshot
            ? `snapshot ${e.snapshot.id}, ${age(e.snapshot.age_seconds)} old (${e.snapshot.finished_at.toISOString()})`
            : 'no readable snapshot'
        }`,
      );
    if (!o.confirm) {
      if (list.length) console.log('Run again with --confirm to restore each from that snapshot onto another host.');
      return;
    }
    await withDeps(async (deps) => {
      for (const e of list) {
        if (!e.snapshot) {
          console.log(`${e.environment.name}: not restored: no readable snapshot (it waits for its host)`);
          continue;
        }
        const r = await startMove(deps, e.environment, 'evacuate', e.snapshot.id);
        console.log(
          'taskId' in r
            ? `${e.environment.name}: restoring onto another host (task ${r.taskId})`
            : `${e.environment.name}: not restored now (${r.refused})`,
        );
      }
    });
  });

program
  .command('join <name>')
  .description('Print the settings a new machine needs to join as NAME (secrets: the key, the database URL)')
  .option('--env-file <path>', 'write them to this file (mode 0600) instead of printing them')
  .action((name: string, o: { envFile?: string }) => {
    hostNameOf(name);
    const lines = joinEnv(name).map(([k, v]) => `${k}=${quote(v)}`);
    const note = [
      '# The control plane as this machine sees it: replace 127.0.0.1 with its private address or a tunnel (docs/hosts.md).',
      '# Add HOST_ADDRESS (where the edge reaches this machine), and DATA_DIR, STORAGE_ROOTS, INSTANCE_PORTS, HOST_CAPACITY as needed.',
    ];
    if (o.envFile) {
      writeFileSync(o.envFile, '', { mode: 0o600 });
      chmodSync(o.envFile, 0o600); // an existing file too, before the secrets go in
      writeFileSync(o.envFile, `${[...note, ...lines].join('\n')}\n`);
      console.log(`Wrote ${o.envFile} (mode 0600). On the new machine: set -a; . ${o.envFile}; set +a; npm run host`);
    } else console.log([...note, ...lines.map((l) => `export ${l}`), 'npm run host'].join('\n'));
  });

await runCommand(program);
