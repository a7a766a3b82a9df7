/**
 * What the edge knows, read from PostgreSQL: the environments' public ports, where each one's web process
 * answers (edge_routes, written by the supervisor), and the verified domains by hostname.
 */
import type { Knex } from 'knex';
import type { Upstream } from './balance';
import { loadChallenges } from './acme-challenges';
import { allEnvironmentEdges, allProjectEdges, edgeEnvironments, verifiedDomains } from '../db/queries/edge-settings';

/** The environment edge's rules, ready to check. */
interface EnvironmentRules {
  /** CIDRs; empty: everyone may connect. */
  allowed: string[];
  password: { username: string; hash: string } | null;
  stickiness: boolean;
}

/** Where an environment is served: its web instances (slot 1 first), or why nothing answers. */
type EdgeRoute = { kind: 'upstream'; upstreams: Upstream[] } | { kind: 'unavailable'; text: string };

/** The project edge's rules, ready to check. */
interface ProjectRules {
  /** CIDRs. */
  blocked: string[];
  /** Lower-cased substrings. */
  agents: string[];
  rateLimit: { requests: number; per_seconds: number } | null;
  hsts: { max_age: number; include_subdomains: boolean; preload: boolean } | null;
  compression: boolean;
  maintenancePage: string | null;
  errorPage: string | null;
}

export interface EdgeState {
  /** environment id -> project id */
  projectOf: Map<string, string>;
  projectRules: Map<string, ProjectRules>;
  envByPort: Map<number, string>;
  routes: Map<string, EdgeRoute>;
  domains: Map<string, string>;
  /** Environments under maintenance, with their note. */
  maintenance: Map<string, { note: string | null }>;
  rules: Map<string, EnvironmentRules>;
  /** The console's ACME HTTP-01 answers: `<hostname>/.well-known/acme-challenge/<token>` -> key authorization. */
  challenges: Map<string, string>;
  /** Environments whose CDN is enabled, with their default TTL in seconds. */
  cdn: Map<string, { defaultTtl: number }>;
}

function toRoute(row: {
  upstream_host: string | null;
  upstream_port: number | null;
  upstreams: Upstream[] | null;
  unavailable: string | null;
}): EdgeRoute {
  if (row.upstreams?.length) return { kind: 'upstream', upstreams: row.upstreams };
  if (row.upstream_host && row.upstream_port)
    return { kind: 'upstream', upstreams: [{ id: '1', host: row.upstream_host, port: row.upstream_port }] };
  return { kind: 'unavailable', text: row.unavailable ?? 'no release is live' };
}

export async function loadEdgeState(knex: Knex): Promise<EdgeState> {
  const [envs, routes, domains, edges, projectEdges, cdns, challenges] = await Promise.all([
    edgeEnvironments(knex),
    knex('edge_routes').select('environment_id', 'upstream_host', 'upstream_port', 'upstreams', 'unavailable'),
    verifiedDomains(knex),
    allEnvironmentEdges(knex),
    allProjectEdges(knex),
    knex('environment_cdns').where({ enabled: true }).select('environment_id', 'default_ttl_seconds'),
    loadChallenges(knex),
  ]);
  const projectRules = new Map<string, ProjectRules>();
  for (const p of projectEdges) {
    projectRules.set(p.project_id, {
      blocked: p.blocked_addresses,
      agents: p.blocked_user_agents.map((a) => a.toLowerCase()),
      rateLimit: p.rate_limit,
      hsts: p.hsts,
      compression: p.compression,
      maintenancePage: p.maintenance_page,
      errorPage: p.error_page,
    });
  }
  const rules = new Map<string, EnvironmentRules>();
  for (const e of edges) {
    rules.set(e.environment_id, {
      allowed: e.allowed_addresses,
      password:
        e.password_hash && e.password_username ? { username: e.password_username, hash: e.password_hash } : null,
      stickiness: e.stickiness,
    });
  }
  return {
    envByPort: new Map(envs.map((e: { id: string; port: number }) => [e.port, e.id])),
    routes: new Map(
      routes.map((r: { environment_id: string } & Parameters<typeof toRoute>[0]) => [r.environment_id, toRoute(r)]),
    ),
    rules,
    projectRules,
    projectOf: new Map(envs.map((e: { id: string; project_id: string }) => [e.id, e.project_id])),
    maintenance: new Map(
      envs
        .filter((e: { maintenance_on: boolean }) => e.maintenance_on)
        .map((e: { id: string; maintenance_note: string | null }) => [e.id, { note: e.maintenance_note }]),
    ),
    cdn: new Map(
      cdns.map((c: { environment_id: string; default_ttl_seconds: number }) => [
        c.environment_id,
        { defaultTtl: c.default_ttl_seconds },
      ]),
    ),
    challenges,
    domains: new Map(domains.map((d: { hostname: string; environment_id: string }) => [d.hostname, d.environment_id])),
  };
}
