/**
 * What HAProxy should hold, derived from the EdgeState read from PostgreSQL (edge/state.ts): the map and ACL
 * files (changed at runtime, no reload), the pages (files read at load), and one backend per environment with
 * its server slots. Each instance slot has two servers, `s<N>a` and `s<N>b`, with the same cookie: a new
 * address goes to the idle one, which is made ready before the other is put in maintenance, so a deploy never
 * reuses a kept-alive connection to the old release and never leaves the slot without a server.
 */
import { createHash } from 'node:crypto';
import { stickyToken } from '../balance';
import { MAX_SERVED_PAGE_BYTES, maintenancePageBytes } from '../../core/edge-pages';
import { DEFAULT_MAINTENANCE_PAGE, hstsValue } from '../rules';
import { escapeHtml } from '../../system/mail/layout';
import type { EdgeState } from '../state';

export interface Address {
  host: string;
  port: number;
}

/** One slot's two servers: which one serves (`a`/`b`), and each one's address (null: none yet). */
export interface Slot {
  active: 'a' | 'b';
  a: Address | null;
  b: Address | null;
  /** Whether the active server serves (false: both in maintenance). */
  on: boolean;
}

export interface EnvBackend {
  envId: string;
  projectId: string;
  sticky: boolean;
  compression: boolean;
  /** The project's error page file (relative), if it has one. */
  errorPage: string | null;
  slots: Slot[];
}

export interface EdgeModel {
  envPorts: number[];
  envs: Map<string, EnvBackend>;
  /**
   * Projects with blocked addresses / blocked agents, environments with allowed addresses: one rule each, in
   * the frontend (a list that becomes empty or stops being empty changes the configuration: a reload; any
   * other change of a list is an ACL file changed at runtime). Only these: a request pays for the rules that
   * exist, not for every environment.
   */
  blockProjects: string[];
  agentProjects: string[];
  ruleEnvs: string[];
  /** Projects with a maintenance page of their own (its file). */
  maintenancePages: Map<string, string>;
  /** The distinct rate limit windows in seconds (one stick table each). */
  ratePeriods: number[];
  /** Map and ACL files: path relative to the data plane's dir -> content. */
  files: Map<string, string>;
  /** Page files (read when HAProxy loads: a change needs a reload). */
  pages: Map<string, string>;
  /** The most bytes a page can take when served (a maintenance page with the longest note at each `{{note}}`). */
  pageBytes: number;
}

export const MIN_SLOTS = 2;

export const mapFile = (name: string) => `maps/${name}.map`;
export const aclFile = (name: string) => `acls/${name}.acl`;
const pageFile = (name: string) => `pages/${name}.html`;

const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');
const digest = (text: string) => createHash('sha256').update(text).digest('hex').slice(0, 16);
/** A map or ACL entry stays on one line. */
const oneLine = (text: string) => text.replace(/[\r\n]+/g, ' ').trim();

/** A page as an `lf-file`: every `%` doubled (log-format), `{{note}}` the environment's note. */
function lfPage(page: string): string {
  return page.replaceAll('%', '%%').replaceAll('{{note}}', '%[var(txn.maint),bytes(1),b64dec]');
}

/**
 * The model for `state`; `certified`: the hostnames whose certificate HAProxy serves. `previous` keeps each environment's slots (which server of each slot serves, at which
 * address), so that a change moves as little as possible.
 */
export function buildModel(state: EdgeState, previous: EdgeModel | null, certified: string[] = []): EdgeModel {
  const lines = (entries: Iterable<[string, string]>) => [...entries].map(([k, v]) => `${k} ${v}\n`).join('');
  const files = new Map<string, string>();
  const pages = new Map<string, string>();
  const envs = new Map<string, EnvBackend>();
  const maintenancePages = new Map<string, string>();
  const blockProjects: string[] = [];
  const agentProjects: string[] = [];
  const ruleEnvs: string[] = [];
  const ratePeriods = new Set<number>();
  let pageBytes = maintenancePageBytes(DEFAULT_MAINTENANCE_PAGE);

  files.set(mapFile('ports'), lines([...state.envByPort].map(([port, env]) => [String(port), env])));
  files.set(mapFile('domains'), lines([...state.domains].map(([host, env]) => [host.toLowerCase(), env])));
  files.set(mapFile('env-project'), lines(state.projectOf));
  files.set(mapFile('acme'), lines(state.challenges));
  files.set(mapFile('certified'), lines(certified.map((h) => [h, '1'])));

  const rates: [string, string][] = [];
  const periods: [string, string][] = [];
  const hsts: [string, string][] = [];
  for (const [projectId, rules] of state.projectRules) {
    if (rules.blocked.length) {
      blockProjects.push(projectId);
      files.set(aclFile(`blocked-${projectId}`), rules.blocked.map((c) => `${c}\n`).join(''));
    }
    if (rules.agents.length) {
      agentProjects.push(projectId);
      files.set(aclFile(`agents-${projectId}`), rules.agents.map((a) => `${oneLine(a)}\n`).join(''));
    }
    if (rules.rateLimit) {
      rates.push([projectId, String(rules.rateLimit.requests)]);
      periods.push([projectId, String(rules.rateLimit.per_seconds)]);
      ratePeriods.add(rules.rateLimit.per_seconds);
    }
    if (rules.hsts) hsts.push([projectId, hstsValue(rules.hsts)]);
    const maintenanceBytes = rules.maintenancePage === null ? 0 : maintenancePageBytes(rules.maintenancePage);
    if (rules.maintenancePage !== null && maintenanceBytes <= MAX_SERVED_PAGE_BYTES) {
      const file = pageFile(`maintenance-${digest(rules.maintenancePage)}`);
      pages.set(file, lfPage(rules.maintenancePage));
      pageBytes = Math.max(pageBytes, maintenanceBytes);
      maintenancePages.set(projectId, file);
    }
  }
  pages.set(pageFile('maintenance-default'), lfPage(DEFAULT_MAINTENANCE_PAGE));
  files.set(mapFile('rate-requests'), lines(rates));
  files.set(mapFile('rate-period'), lines(periods));
  files.set(mapFile('hsts'), lines(hsts));

  const maintenance: [string, string][] = [];
  for (const envId of state.projectOf.keys()) {
    const rules = state.rules.get(envId);
    if (rules?.allowed.length) {
      ruleEnvs.push(envId);
      files.set(aclFile(`allowed-${envId}`), rules.allowed.map((c) => `${c}\n`).join(''));
    }
    const m = state.maintenance.get(envId);
    // `n` + the note, escaped for HTML, in base64 (a map value is one line; the note may be empty)
    if (m) maintenance.push([envId, `n${b64(escapeHtml(m.note ?? ''))}`]);
  }
  files.set(mapFile('maintenance'), lines(maintenance));
  files.set(
    mapFile('cdn'),
    lines([...state.cdn].filter(([env]) => state.projectOf.has(env)).map(([env, c]) => [env, String(c.defaultTtl)])),
  );

  // why nothing answers (no release is live, stopped, ...): the edge's 503 says it, in base64 (one map line)
  const unavailable: [string, string][] = [];
  for (const envId of state.projectOf.keys()) {
    const route = state.routes.get(envId);
    if (route?.kind !== 'upstream') unavailable.push([envId, b64(oneLine(route?.text ?? '') || 'no release is live')]);
  }
  files.set(mapFile('unavailable'), lines(unavailable));

  /** projectId -> its error page's file (null: none, or one HAProxy could not hold) */
  const errorPages = new Map<string, string | null>();
  for (const [envId, projectId] of state.projectOf) {
    const project = state.projectRules.get(projectId);
    const route = state.routes.get(envId);
    const upstreams = route?.kind === 'upstream' ? route.upstreams : [];
    const before = previous?.envs.get(envId)?.slots ?? [];
    const count = Math.max(MIN_SLOTS, before.length, upstreams.length);
    const slots: Slot[] = [];
    for (let i = 0; i < count; i++) {
      const want = upstreams[i] ? { host: upstreams[i].host, port: upstreams[i].port } : null;
      const old = before[i];
      if (!old) {
        slots.push({ active: 'a', a: want, b: null, on: want !== null });
        continue;
      }
      const current = old[old.active];
      if (!want) slots.push({ ...old, on: false });
      else if (current && current.host === want.host && current.port === want.port) slots.push({ ...old, on: true });
      else {
        // the idle server takes the new address (it has no connection to reuse), then serves
        const idle = old.active === 'a' ? 'b' : 'a';
        slots.push({ ...old, active: idle, [idle]: want, on: true });
      }
    }
    // once per project, not per environment: a page is up to 100,000 characters to measure and digest
    let errorPage = errorPages.get(projectId);
    if (errorPage === undefined) {
      errorPage = null;
      const bytes = project?.errorPage ? Buffer.byteLength(project.errorPage) : 0;
      if (project?.errorPage && bytes <= MAX_SERVED_PAGE_BYTES) {
        errorPage = pageFile(`error-${digest(project.errorPage)}`);
        pages.set(errorPage, project.errorPage);
        pageBytes = Math.max(pageBytes, bytes);
      }
      errorPages.set(projectId, errorPage);
    }
    envs.set(envId, {
      envId,
      projectId,
      sticky: state.rules.get(envId)?.stickiness ?? false,
      compression: project?.compression ?? false,
      errorPage,
      slots,
    });
  }

  // the CDN's HITs are compressed in HAProxy for the environments whose project compresses (be_cdn_gz)
  files.set(
    mapFile('compressed'),
    lines([...envs.values()].filter((e) => e.compression).map((e): [string, string] => [e.envId, '1'])),
  );

  return {
    envPorts: [...state.envByPort.keys()].sort((a, b) => a - b),
    envs,
    blockProjects: blockProjects.sort(),
    agentProjects: agentProjects.sort(),
    ruleEnvs: ruleEnvs.sort(),
    maintenancePages,
    ratePeriods: [...ratePeriods].sort((a, b) => a - b),
    files,
    pages,
    pageBytes,
  };
}

/** The cookie a slot's servers carry (the instance's token: the same for `a` and `b`). */
export const slotCookie = (envId: string, slot: number) => stickyToken(envId, String(slot + 1));

export const backendName = (envId: string) => `e_${envId}`;
export const serverName = (slot: number, side: 'a' | 'b') => `s${slot + 1}${side}`;
