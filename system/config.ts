import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  acmeDirectory,
  allowedHosts,
  controlPlaneBindOf,
  DEFAULT_SANDBOX_NETWORK,
  dnsServers,
  hostNameOf,
  hourOfDay,
  int,
  list,
  parseSandboxNetwork,
  pitrRepository,
  releaseStoreLocation,
  sharedDirs,
  storageRoots,
} from './config-values';
import { type HostConfig, loadHostConfig } from './host-config';
import { DEFAULT_TASK_QUEUE, hostTaskQueue } from './task-queues';

export interface Config extends HostConfig {
  port: number;
  host: string;
  baseUrl: string;
  databaseUrl: string | undefined;
  temporalAddress: string | undefined;
  temporalNamespace: string;
  temporalPort: number;
  taskQueue: string;
  /**
   * ACTIVITY_HEARTBEAT_TIMEOUT_SECONDS: a shorter heartbeat timeout for the workflows this process starts
   * (their `heartbeating` and `long` activities: 10 s and 15 s otherwise). Unset by default; tests set it.
   */
  activityHeartbeatTimeoutSeconds: number | undefined;
  smtpUrl: string | undefined;
  mailFrom: string;
  /** Where support tickets and their replies are e-mailed. */
  supportEmail: string;
  dataDir: string;
  /** The built web console the API serves at `/` (CONSOLE_DIR; default console/dist of this checkout). */
  consoleDir: string;
  /** The console's name (CONSOLE_NAME): the served index.html's title and `<meta name="console-name">`. */
  consoleName: string;
  buildConcurrency: number;
  redisUrl: string | undefined;
  trustProxyHops: number;
  logLevel: string;
  /** Public host name of environments served by the local provider. */
  environmentHost: string;
  /** Address the environments' proxies listen on (0.0.0.0 in a container). */
  environmentBind: string;
  /**
   * Where `npm start`'s embedded PostgreSQL and Temporal dev server listen for hosts (CONTROL_PLANE_BIND, default
   * 127.0.0.1: this machine only); another address: loopback and that address (0.0.0.0: every address).
   */
  controlPlaneBind: string;
  /** Range of ports the local provider gives environments. */
  environmentPorts: { from: number; to: number };
  /** Host directories every environment's sandbox sees read-only at the same path (shared toolchains). */
  sandboxSharedDirs: string[];
  /** This machine's name among the hosts (HOST_NAME; default: the machine's hostname): its machine objects carry it. */
  hostName: string;
  /** This host's sandboxes' IPv4 block (SANDBOX_NETWORK, default 10.200.0.0/14): a /30 for each port. */
  sandboxNetwork: string;
  /** Requests a minute per personal access token; `prefix` namespaces the shared (Redis) counters. */
  rateLimit: { perMinute: number; prefix: string };
  failedCredentials: { limit: number; windowSeconds: number; blockSeconds: number; dailyCap: number };
  /** Creations per client address an hour: invitations sent, command-line device codes started. */
  creationLimits: { invitationsPerHour: number; deviceCodesPerHour: number };
  session: { ttlHours: number; cliTtlDays: number };
  bodyLimitBytes: number;
  /** How long an API process may keep a token look-up (changes reach it at once through NOTIFY); 0: off. */
  credentialCacheSeconds: number;
  /** The most a task's log keeps; output beyond it is dropped, with one marker line saying so. */
  taskLogLimitBytes: number;
  stepTimeoutSeconds: number;
  reminderHourUtc: number;
  /** Hour (UTC) of the daily prune-expired run (at :30). */
  pruneHourUtc: number;
  /** Whether this worker ensures the token-expiry reminder schedule (off for extra workers, e.g. in tests). */
  reminderSchedule: boolean;
  /** Secrets: given in the environment, or generated once and kept under dataDir (see secrets.ts). */
  tokenHmacKey: string | undefined;
  /** TOKEN_HMAC_KEY's id (TOKEN_HMAC_KEY_ID, default `env`); a rotated key needs an id of its own. */
  tokenHmacKeyId: string | undefined;
  /** Older token keys under which tokens are still found (TOKEN_HMAC_KEYS_PREVIOUS: `id:key,id:key`). */
  tokenHmacKeysPrevious: string | undefined;
  /** Test hook (VC_CHECK_RESPONSES=1): every 2xx body is checked against its documented schema (api/lib/router.ts). */
  checkResponses: boolean;
  /** Bearer token of GET /metrics; unset: metrics are served to loopback clients only. */
  metricsToken: string | undefined;
  /** Another price list than the one shipped (system/price-list.json). */
  priceList: string | undefined;
  /** AES-256-GCM key of values encrypted at rest (ENCRYPTION_KEY), else generated under dataDir. */
  encryptionKey: string | undefined;
  /** ENCRYPTION_KEY's id (ENCRYPTION_KEY_ID, default `env`): a host agent takes the control plane's id with its bytes. */
  encryptionKeyId: string | undefined;
  /** Older encryption keys that open what they sealed (ENCRYPTION_KEYS_PREVIOUS: `id:key,id:key`; docs/encryption-keys.md). */
  encryptionKeysPrevious: string | undefined;
  /** Port of the edge's Host-header listener (verified domains); every environment also has its own port. */
  edgePort: number;
  /**
   * What one client address may hold of the edge (docs/edge.md): concurrent connections
   * (EDGE_CONNECTIONS_PER_ADDRESS) and new connections per 10 s (EDGE_CONNECTION_RATE_PER_ADDRESS).
   */
  edgePerAddress: { connections: number; connectionRate: number };
  /**
   * HAProxy's threads (EDGE_THREADS): by default one less than the machine's cores, at least one, so that a core is
   * left to the tenants and the control plane (docs/edge.md "Threads").
   */
  edgeThreads: number;
  /** Resolvers of domain verification (`ip` or `ip:port`); undefined: the system's. */
  dnsServers: string[] | undefined;
  /** Domains a project may have unless its settings say otherwise. */
  domainAllowance: number;
  /** First wait of the background re-check of a pending domain (doubling, at most an hour). */
  domainRecheckSeconds: number;
  /** Seconds between two resource samples of every environment (the worker's sampler). */
  resourceSampleSeconds: number;
  /** Seconds between two looks at the git refs of environments with auto_deploy on (0: no poller). */
  autoDeployPollSeconds: number;
  /** Most web instances an environment may scale to (SCALE_MAX). */
  scaleMax: number;
  /** How long a task waits for every edge to apply its change before it fails (EDGE_TASK_WAIT_SECONDS, 1-120). */
  edgeTaskWaitSeconds: number;
  /** PostgreSQL server (superuser URL) that environments' database services are created on; default: databaseUrl. */
  servicesDatabaseUrl: string | undefined;
  /**
   * The services server's address as this host sees it (SERVICES_HOST, default 127.0.0.1): the environments'
   * processes reach it there (DATABASE_URL, PGHOST) without a network namespace; sandboxed, at their gateway,
   * whose services port this host DNATs there.
   */
  servicesHost: string;
  /**
   * The data directory of the services server the console runs itself (SERVICES_PGDATA; `npm start` sets it for
   * the embedded server when it is the services server): its WAL is archived (CONTRACT "Point-in-time recovery").
   */
  servicesPgdata: string | undefined;
  /** Port of the SERVICES_PGDATA server (SERVICES_PORT, default 54330). */
  servicesPort: number;
  /** Point-in-time recovery of the console's services server (host/pitr.ts). */
  pitr: PitrConfig;
  /** Where built releases are kept for every host to start (host/release-store.ts, docs/hosts.md). */
  releaseStore: ReleaseStoreConfig;
  /** Directories local repository paths and `file://` URLs may be under (LOCAL_REPOSITORY_ROOTS); none: refused. */
  localRepositoryRoots: string[];
  /** Directories local backup destinations may be under (BACKUP_LOCAL_ROOTS); none: no local destinations. */
  backupLocalRoots: string[];
  /** Directories environments' disks may live under (STORAGE_ROOTS; default DATA_DIR/storage); the first is where new disks go. */
  storageRoots: string[];
  /** Hosts, addresses and CIDRs tenant connections may reach although internal (OUTBOUND_ALLOWED_HOSTS). */
  outboundAllowedHosts: string[];
  /** Automatic HTTPS (CONTRACT "Certificates", docs/https.md). */
  acme: AcmeConfig;
}

interface PitrConfig {
  /** PITR_REPOSITORY: a directory (default DATA_DIR/pitr) or `s3://bucket/prefix`. */
  repository: string;
  /** PITR_DAYS (default 7): how deep the archive is kept. */
  days: number;
  /** PITR_ARCHIVE_TIMEOUT (default 60, CONTRACT's archive_timeout): seconds at most before a WAL segment is archived. */
  archiveTimeout: number;
  /** The operator's S3_* settings, for an `s3://` repository. */
  s3: { endpoint?: string; region?: string; accessKeyId?: string; secretAccessKey?: string; caFile?: string };
}

export interface ReleaseStoreConfig {
  /** RELEASE_STORE: a directory (default DATA_DIR/releases, one machine only) or `s3://bucket/prefix`. */
  location: string;
  /** RELEASE_KEEP (default 5): the releases of each environment kept besides its live one. */
  keep: number;
  /** The operator's S3_* settings, for an `s3://` store. */
  s3: PitrConfig['s3'];
}

export interface AcmeConfig {
  /** The ACME directory certificates are asked from (ACME_DIRECTORY_URL); undefined: none is requested. */
  directoryUrl: string | undefined;
  /** The ACME account's contact (ACME_EMAIL). */
  email: string | undefined;
  /** A PEM file of CA certificates trusted for the directory besides the system's (ACME_CA_FILE: a private CA). */
  caFile: string | undefined;
  /** Where the edge serves HTTPS (EDGE_TLS_PORT, default 8443). */
  tlsPort: number;
  /** The port named in the edge's redirects to HTTPS (EDGE_TLS_PUBLIC_PORT, default tlsPort; 443 behind a forward). */
  tlsPublicPort: number;
  /** Renew a certificate this many days before it expires (CERTIFICATE_RENEW_DAYS, default 30). */
  renewDays: number;
  /** The first wait between two attempts of one issuing task (doubling; CERTIFICATE_RETRY_SECONDS, default 60). */
  retrySeconds: number;
  /** Attempts of one issuing task before the certificate is `failed` (then tried again once a day). */
  attempts: number;
}

/** The operator's S3_* settings (PITR_REPOSITORY and RELEASE_STORE when they are `s3://`). */
function operatorS3(env: NodeJS.ProcessEnv): PitrConfig['s3'] {
  return {
    endpoint: env.S3_ENDPOINT || undefined,
    region: env.S3_REGION || undefined,
    accessKeyId: env.S3_ACCESS_KEY_ID || undefined,
    secretAccessKey: env.S3_SECRET_ACCESS_KEY || undefined,
    caFile: env.S3_CA_FILE ? resolve(env.S3_CA_FILE) : undefined,
  };
}

// the queue names are in their own file, which the workflow bundle imports too
export { DEFAULT_TASK_QUEUE, hostTaskQueue };
// the settings' readers other modules use
export { DEFAULT_SANDBOX_NETWORK, hostNameOf, parseSandboxNetwork };

/** EDGE_THREADS: HAProxy's threads, by default one less than the cores (at least one). */
export function edgeThreads(env: NodeJS.ProcessEnv): number {
  return Math.min(64, Math.max(1, int(env, 'EDGE_THREADS', availableParallelism() - 1)));
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const port = int(env, 'PORT', 8080);
  const ports = (env.ENVIRONMENT_PORTS ?? '20000-20999').split('-').map(Number);
  if (ports.length !== 2 || !ports.every(Number.isInteger) || ports[0] > ports[1]) {
    throw new Error(`ENVIRONMENT_PORTS must look like 20000-20999, got "${env.ENVIRONMENT_PORTS}"`);
  }
  const config: Config = {
    port,
    host: env.HOST ?? '0.0.0.0',
    baseUrl: (env.BASE_URL ?? `http://localhost:${port}`).replace(/\/+$/, ''),
    databaseUrl: env.DATABASE_URL || undefined,
    temporalAddress: env.TEMPORAL_ADDRESS || undefined,
    temporalNamespace: env.TEMPORAL_NAMESPACE || 'default',
    temporalPort: int(env, 'TEMPORAL_PORT', 7233),
    taskQueue: env.TEMPORAL_TASK_QUEUE || DEFAULT_TASK_QUEUE,
    activityHeartbeatTimeoutSeconds: env.ACTIVITY_HEARTBEAT_TIMEOUT_SECONDS
      ? Math.max(1, int(env, 'ACTIVITY_HEARTBEAT_TIMEOUT_SECONDS', 15))
      : undefined,
    smtpUrl: env.SMTP_URL || undefined,
    mailFrom: env.MAIL_FROM || 'Hosting Console <console@localhost>',
    supportEmail: env.SUPPORT_EMAIL || 'support@localhost',
    dataDir: resolve(env.DATA_DIR || 'var'),
    consoleDir: resolve(env.CONSOLE_DIR || fileURLToPath(new URL('../console/dist', import.meta.url))),
    consoleName: env.CONSOLE_NAME?.trim() || 'Hosting Console',
    buildConcurrency: Math.max(1, int(env, 'BUILD_CONCURRENCY', 2)),
    redisUrl: env.REDIS_URL || undefined,
    trustProxyHops: int(env, 'TRUST_PROXY_HOPS', 0),
    logLevel: env.LOG_LEVEL || 'info',
    environmentHost: env.ENVIRONMENT_HOST || 'localhost',
    environmentBind: env.ENVIRONMENT_BIND || '127.0.0.1',
    controlPlaneBind: controlPlaneBindOf(env.CONTROL_PLANE_BIND),
    environmentPorts: { from: ports[0], to: ports[1] },
    sandboxSharedDirs: sharedDirs(env.SANDBOX_SHARED_DIRS),
    hostName: hostNameOf(env.HOST_NAME),
    sandboxNetwork: parseSandboxNetwork(env.SANDBOX_NETWORK || DEFAULT_SANDBOX_NETWORK).cidr,
    ...loadHostConfig(env, resolve(env.DATA_DIR || 'var')),
    rateLimit: {
      perMinute: Math.max(1, int(env, 'RATE_LIMIT_PER_MINUTE', 600)),
      prefix: env.RATE_LIMIT_PREFIX || 'vc',
    },
    failedCredentials: {
      limit: Math.max(1, int(env, 'FAILED_CREDENTIALS_LIMIT', 10)),
      windowSeconds: Math.max(1, int(env, 'FAILED_CREDENTIALS_WINDOW_SECONDS', 600)),
      blockSeconds: Math.max(1, int(env, 'FAILED_CREDENTIALS_BLOCK_SECONDS', 900)),
      dailyCap: Math.max(1, int(env, 'FAILED_CREDENTIALS_DAILY_CAP', 100)),
    },
    creationLimits: {
      invitationsPerHour: Math.max(1, int(env, 'INVITATIONS_PER_HOUR', 60)),
      deviceCodesPerHour: Math.max(1, int(env, 'DEVICE_CODES_PER_HOUR', 30)),
    },
    session: { ttlHours: int(env, 'SESSION_TTL_HOURS', 24 * 14), cliTtlDays: int(env, 'CLI_SESSION_TTL_DAYS', 30) },
    bodyLimitBytes: int(env, 'BODY_LIMIT_BYTES', 1024 * 1024),
    credentialCacheSeconds: int(env, 'CREDENTIAL_CACHE_SECONDS', 10),
    taskLogLimitBytes: Math.max(1024, int(env, 'TASK_LOG_LIMIT_BYTES', 10 * 1024 * 1024)),
    stepTimeoutSeconds: int(env, 'STEP_TIMEOUT_SECONDS', 900),
    reminderHourUtc: hourOfDay(env, 'REMINDER_HOUR_UTC', 9),
    pruneHourUtc: hourOfDay(env, 'PRUNE_HOUR_UTC', 3),
    reminderSchedule: !['0', 'false', 'off', 'no'].includes((env.REMINDER_SCHEDULE ?? 'on').toLowerCase()),
    tokenHmacKey: env.TOKEN_HMAC_KEY || undefined,
    tokenHmacKeyId: env.TOKEN_HMAC_KEY_ID || undefined,
    tokenHmacKeysPrevious: env.TOKEN_HMAC_KEYS_PREVIOUS || undefined,
    encryptionKey: env.ENCRYPTION_KEY || undefined,
    encryptionKeyId: env.ENCRYPTION_KEY_ID || undefined,
    encryptionKeysPrevious: env.ENCRYPTION_KEYS_PREVIOUS || undefined,
    edgePort: int(env, 'EDGE_PORT', 8000),
    edgePerAddress: {
      connections: Math.max(1, int(env, 'EDGE_CONNECTIONS_PER_ADDRESS', 100)),
      connectionRate: Math.max(1, int(env, 'EDGE_CONNECTION_RATE_PER_ADDRESS', 200)),
    },
    edgeThreads: edgeThreads(env),
    dnsServers: dnsServers(env.DNS_SERVERS),
    domainAllowance: int(env, 'DOMAIN_ALLOWANCE', 10),
    domainRecheckSeconds: Math.max(1, int(env, 'DOMAIN_RECHECK_SECONDS', 60)),
    resourceSampleSeconds: Math.max(1, int(env, 'RESOURCE_SAMPLE_SECONDS', 60)),
    autoDeployPollSeconds: Math.max(0, int(env, 'AUTO_DEPLOY_POLL_SECONDS', 30)),
    scaleMax: Math.max(1, int(env, 'SCALE_MAX', 4)),
    edgeTaskWaitSeconds: Math.min(120, Math.max(1, int(env, 'EDGE_TASK_WAIT_SECONDS', 60))),
    servicesDatabaseUrl: env.SERVICES_DATABASE_URL || undefined,
    servicesHost: env.SERVICES_HOST || '127.0.0.1',
    servicesPgdata: env.SERVICES_PGDATA ? resolve(env.SERVICES_PGDATA) : undefined,
    servicesPort: int(env, 'SERVICES_PORT', 54330),
    pitr: {
      repository: pitrRepository(env.PITR_REPOSITORY, resolve(env.DATA_DIR || 'var')),
      days: Math.max(1, int(env, 'PITR_DAYS', 7)),
      archiveTimeout: Math.min(3600, Math.max(1, int(env, 'PITR_ARCHIVE_TIMEOUT', 60))),
      s3: operatorS3(env),
    },
    releaseStore: {
      location: releaseStoreLocation(env.RELEASE_STORE, resolve(env.DATA_DIR || 'var')),
      keep: Math.max(0, int(env, 'RELEASE_KEEP', 5)),
      s3: operatorS3(env),
    },
    checkResponses: env.VC_CHECK_RESPONSES === '1',
    priceList: env.PRICE_LIST || undefined,
    metricsToken: env.METRICS_TOKEN || undefined,
    localRepositoryRoots: list(env.LOCAL_REPOSITORY_ROOTS).map((dir) => resolve(dir)),
    backupLocalRoots: list(env.BACKUP_LOCAL_ROOTS).map((dir) => resolve(dir)),
    storageRoots: storageRoots(env.STORAGE_ROOTS, resolve(env.DATA_DIR || 'var')),
    outboundAllowedHosts: allowedHosts(env.OUTBOUND_ALLOWED_HOSTS),
    acme: {
      directoryUrl: acmeDirectory(env.ACME_DIRECTORY_URL),
      email: env.ACME_EMAIL || undefined,
      caFile: env.ACME_CA_FILE ? resolve(env.ACME_CA_FILE) : undefined,
      tlsPort: int(env, 'EDGE_TLS_PORT', 8443),
      tlsPublicPort: int(env, 'EDGE_TLS_PUBLIC_PORT', int(env, 'EDGE_TLS_PORT', 8443)),
      renewDays: int(env, 'CERTIFICATE_RENEW_DAYS', 30),
      retrySeconds: Math.max(1, int(env, 'CERTIFICATE_RETRY_SECONDS', 60)),
      attempts: 5,
    },
  };
  outsideEnvironmentPorts(config);
  return config;
}

/**
 * The console's own ports never lie inside ENVIRONMENT_PORTS: the edge listens on that whole range, one port per
 * environment, and the environment given a port that the API, the edge's EDGE_PORT or EDGE_TLS_PORT holds would
 * never be served. Nor do the instance ports (INSTANCE_PORTS, forwarded to the sandboxes on HOST_ADDRESS).
 */
function outsideEnvironmentPorts(c: Config): void {
  const range = c.environmentPorts;
  const inside = (p: number) => p >= range.from && p <= range.to;
  const named = `ENVIRONMENT_PORTS (${range.from}-${range.to})`;
  for (const [name, p] of [
    ['PORT', c.port],
    ['EDGE_PORT', c.edgePort],
    ['EDGE_TLS_PORT', c.acme.tlsPort],
  ] as const)
    if (inside(p))
      throw new Error(
        `${name} (${p}) lies inside ${named}: the environment given that port would never be served. Choose a port outside the range, or move the range`,
      );
  const instance = c.instancePorts;
  if (instance.from <= range.to && instance.to >= range.from)
    throw new Error(
      `INSTANCE_PORTS (${instance.from}-${instance.to}) overlaps ${named}: the edge listens on every port of that range. Choose ranges apart`,
    );
}

/** `http://{environmentHost}:{port}`: where the local provider serves an environment. */
export function environmentUrl(config: Pick<Config, 'environmentHost'>, port: number): string {
  return `http://${config.environmentHost}:${port}`;
}
