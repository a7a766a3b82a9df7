/** What the edge is started with (edge/server.ts startEdge), and what a started edge offers. */
import type { Knex } from 'knex';
import type { EdgeState } from './state';
import type { Secrets } from '../system/secrets';
import type { CertificateFilesOptions } from './certificate-files';

export interface EdgeOptions {
  knex: Knex;
  databaseUrl: string;
  /** Address every listener binds (ENVIRONMENT_BIND). */
  host: string;
  /** EDGE_PORT; 0: a free port chosen at start (tests). */
  edgePort: number;
  /** ENVIRONMENT_PORTS: HAProxy binds the whole range, with one backend per port. */
  environmentPorts: { from: number; to: number };
  /** SCALE_MAX: each backend's server slots (default 4). */
  scaleMax?: number;
  /** DATA_DIR: the data plane's files go under DATA_DIR/edge/haproxy. */
  dataDir: string;
  logger?: { warn(obj: unknown, msg?: string): void; info(obj: unknown, msg?: string): void };
  /** Reload period in case a notification was lost (default 30 s). */
  refreshMs?: number;
  /** Proxies in front of the edge whose X-Forwarded-For/-Proto are believed (TRUST_PROXY_HOPS). */
  trustProxyHops?: number;
  /** What one client address may hold (default 100 connections, 200 new ones per 10 s; edge/haproxy/config.ts). */
  perAddress?: { connections: number; connectionRate: number };
  /** HAProxy's threads (EDGE_THREADS); unset: HAProxy's own default, one per core. */
  threads?: number;
  /** The key the environments' passwords' digests are made with (edge/basic-auth/). */
  secrets: Pick<Secrets, 'encryptionKey'>;
  /** The CDN tier's Varnish: its directory (default DATA_DIR/edge/varnish; one per live edge) and storage. */
  cdn?: { dir?: string; storage?: string };
  /**
   * Map and ACL files other parts of the edge keep (relative: `maps/<name>.map`, `acls/<name>.acl`), from
   * the state read: written and changed at runtime like the edge's own (prepare/commit), no reload.
   */
  files?: (state: EdgeState) => Map<string, string>;
  /**
   * The request log on: HAProxy writes a line per request into its ring, which forwards to the shipper
   * process's socket under DATA_DIR (processes/shipper.ts; lines wait in the ring while it is away).
   */
  requestLog?: boolean;
  /** Where the certificates' PEM files for HAProxy go (edge/certificate-files.ts); unset: none are written. */
  certificateFiles?: Omit<CertificateFilesOptions, 'knex'>;
  /** HTTPS on EDGE_TLS_PORT (needs `certificateFiles`): the certificates by SNI, 308 from plain HTTP. */
  tls?: { port: number; publicPort: number };
  /** Leave HAProxy running on close() (a control plane stopped to be replaced; tests of adoption). */
  keepDataPlane?: boolean;
}

export interface Edge {
  /** The port EDGE_PORT resolved to. */
  port: number;
  /** The master's pid. */
  haproxyPid(): number | null;
  /** Whether this control plane adopted an HAProxy left running. */
  adopted: boolean;
  /** The reloads this control plane made HAProxy do (a held port freed; never a rule, a route or a page). */
  reloads(): number;
  reload(): Promise<void>;
  close(): Promise<void>;
}
