/**
 * What HAProxy should hold, derived from the EdgeState read from PostgreSQL (edge/state.ts): the map and ACL
 * files (changed at runtime, no reload; the pages too, in pages.map), and the backends in use with their
 * server slots. HAProxy has one backend per port of ENVIRONMENT_PORTS (`p<port>`), each with SCALE_MAX slots
 * (config.ts), so an environment added or removed, or scaled, changes maps and servers only. Each instance slot
 * has two servers, `s<N>a` and `s<N>b`, with the same cookie: a new address goes to the idle one, which is
 * made ready before the other is put in maintenance, so a deploy never reuses a kept-alive connection to the
 * old release and never leaves the slot without a server.
 */
import { BlockList, isIPv4 } from 'node:net';
import { stickyToken } from '../balance';
import { MAX_SERVED_PAGE_BYTES, maintenancePageBytes } from '../../core/edge-pages';
import { DEFAULT_MAINTENANCE_PAGE, hstsValue } from '../rules';
import { escapeHtml } from '../../system/html';
import type { EdgeState } from '../state';
import { errorPageKey, errorPageMode, pageEntries, pageKey } from './pages';

interface Address {
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

interface EnvBackend {
  envId: string;
  /** The environment's port: its backend is `p<port>`. */
  port: number;
  projectId: string;
  sticky: boolean;
  compression: boolean;
  slots: Slot[];
}

export interface EdgeModel {
  /** The environments' backends by port (the ports in use; the others' servers are all in maintenance). */
  envs: Map<number, EnvBackend>;
  /** Map and ACL files: path relative to the data plane's dir -> content. */
  files: Map<string, string>;
  /** Files HAProxy reads when it loads (a change needs a reload): the control plane adds the pages' Lua. */
  pages: Map<string, string>;
}

const MIN_SLOTS = 2;

/** Server slots per backend: SCALE_MAX (at least MIN_SLOTS). */
export const slotsFor = (scaleMax: number) => Math.max(MIN_SLOTS, scaleMax);

/**
 * Address lists as two maps, changed at runtime whatever they hold (no rule per list): `<name>-net.map` maps
 * every network of every list to itself (HAProxy's `map_ip` answers the longest network holding the client),
 * `<name>.map` holds `<owner>|<network>` for each owner one of whose networks contains that network. The
 * longest network holding an address lies inside every listed network that holds it, so one lookup in each
 * map says whether an owner's list holds the client. A network names itself, so the two maps, replaced one
 * after the other, agree on every network both the old and the new lists have.
 */
function addressLists(lists: Map<string, string[]>): { nets: [string, string][]; pairs: [string, string][] } {
  const parse = (cidr: string) => {
    const [addr, len] = cidr.split('/');
    const v4 = isIPv4(addr);
    return { addr, v4, len: len === undefined ? (v4 ? 32 : 128) : Number(len) };
  };
  const networks = [...new Set([...lists.values()].flat())].sort();
  const parsed = networks.map((cidr) => ({ cidr, ...parse(cidr) }));
  const pairs: [string, string][] = [];
  for (const [owner, cidrs] of lists) {
    const inside = new Set<string>();
    for (const c of cidrs) {
      const x = parse(c);
      const family = x.v4 ? 'ipv4' : 'ipv6';
      const net = new BlockList();
      net.addSubnet(x.addr, x.len, family);
      // a network lies inside X: same family, a prefix no shorter, its first address in X
      for (const y of parsed) if (y.v4 === x.v4 && y.len >= x.len && net.check(y.addr, family)) inside.add(y.cidr);
    }
    for (const cidr of [...inside].sort()) pairs.push([`${owner}|${cidr}`, '1']);
  }
  return { nets: networks.map((c) => [c, c]), pairs };
}

/** A blocked agent (a case-insensitive substring) as a regex on `<project>|<User-Agent>`. */
const agentPattern = (projectId: string, agent: string) =>
  `^${projectId}\\|.*${oneLine(agent).replace(/[\\^$.|?*+()[\]{}]/g, (c) => `\\${c}`)}`;

export const mapFile = (name: string) => `maps/${name}.map`;
export const aclFile = (name: string) => `acls/${name}.acl`;

const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');
/** A map or ACL entry stays on one line. */
const oneLine = (text: string) => text.replace(/[\r\n]+/g, ' ').trim();

/**
 * The model for `state`; `certified`: the hostnames whose certificate HAProxy serves. `previous` keeps each environment's slots (which server of each slot serves, at which
 * address), so that a change moves as little as possible.
 */
export function buildModel(
  state: EdgeState,
  previous: EdgeModel | null,
  certified: string[] = [],
  slotCount = MIN_SLOTS,
): EdgeModel {
  const lines = (entries: Iterable<[string, string]>) => [...entries].map(([k, v]) => `${k} ${v}\n`).join('');
  const files = new Map<string, string>();
  const pages = new Map<string, string>();
  const envs = new Map<number, EnvBackend>();
  // the maintenance pages (`m<project>`, `mdefault`) and the error pages (`e<project>`), served by Lua
  const servedPages: [string, string][] = pageEntries(pageKey(null), DEFAULT_MAINTENANCE_PAGE);
  /** projectId -> how its environments are served with its error page (pages.ts errorPageMode) */
  const errorPages = new Map<string, 'r' | 's'>();
  const blocked = new Map<string, string[]>();
  const agents: string[] = [];
  const agentProjects: [string, string][] = [];

  files.set(mapFile('ports'), lines([...state.envByPort].map(([port, env]) => [String(port), env])));
  files.set(mapFile('domains'), lines([...state.domains].map(([host, env]) => [host.toLowerCase(), env])));
  files.set(mapFile('env-project'), lines(state.projectOf));
  files.set(mapFile('env-port'), lines([...state.envByPort].map(([port, env]) => [env, String(port)])));
  files.set(mapFile('acme'), lines(state.challenges));
  files.set(mapFile('certified'), lines(certified.map((h) => [h, '1'])));

  const rates: [string, string][] = [];
  const periods: [string, string][] = [];
  const hsts: [string, string][] = [];
  for (const [projectId, rules] of state.projectRules) {
    if (rules.blocked.length) blocked.set(projectId, rules.blocked);
    if (rules.agents.length) {
      agentProjects.push([projectId, '1']);
      for (const a of rules.agents) agents.push(agentPattern(projectId, a));
    }
    if (rules.rateLimit) {
      rates.push([projectId, String(rules.rateLimit.requests)]);
      periods.push([projectId, String(rules.rateLimit.per_seconds)]);
    }
    if (rules.hsts) hsts.push([projectId, hstsValue(rules.hsts)]);
    const maintenanceBytes = rules.maintenancePage === null ? 0 : maintenancePageBytes(rules.maintenancePage);
    if (rules.maintenancePage !== null && maintenanceBytes <= MAX_SERVED_PAGE_BYTES)
      servedPages.push(...pageEntries(pageKey(projectId), rules.maintenancePage));
    // a page past the API's limit (stored before it was checked) is not served: HAProxy's own answers are
    const errorBytes = rules.errorPage ? Buffer.byteLength(rules.errorPage) : 0;
    if (rules.errorPage && errorBytes <= MAX_SERVED_PAGE_BYTES) {
      servedPages.push(...pageEntries(errorPageKey(projectId), rules.errorPage));
      errorPages.set(projectId, errorPageMode(errorBytes));
    }
  }
  files.set(mapFile('pages'), lines(servedPages));
  files.set(mapFile('rate-requests'), lines(rates));
  files.set(mapFile('rate-period'), lines(periods));
  files.set(mapFile('hsts'), lines(hsts));
  const blockedLists = addressLists(blocked);
  files.set(mapFile('blocked-net'), lines(blockedLists.nets));
  files.set(mapFile('blocked'), lines(blockedLists.pairs));
  files.set(mapFile('agent-projects'), lines(agentProjects));
  files.set(aclFile('agents'), agents.map((a) => `${a}\n`).join(''));

  const maintenance: [string, string][] = [];
  const allowed = new Map<string, string[]>();
  for (const envId of state.projectOf.keys()) {
    const rules = state.rules.get(envId);
    if (rules?.allowed.length) allowed.set(envId, rules.allowed);
    const m = state.maintenance.get(envId);
    // `n` + the note, escaped for HTML, in base64 (a map value is one line; the note may be empty)
    if (m) maintenance.push([envId, `n${b64(escapeHtml(m.note ?? ''))}`]);
  }
  files.set(mapFile('maintenance'), lines(maintenance));
  const allowedLists = addressLists(allowed);
  files.set(mapFile('allowed-net'), lines(allowedLists.nets));
  files.set(mapFile('allowed'), lines(allowedLists.pairs));
  // after its networks (runtime.ts applies in this order: a list that appears is whole when it starts to count)
  files.set(mapFile('allowlisted'), lines([...allowed.keys()].map((env) => [env, '1'])));
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

  const portOf = new Map([...state.envByPort].map(([port, env]) => [env, port]));
  for (const [envId, projectId] of state.projectOf) {
    const port = portOf.get(envId);
    if (port === undefined) continue;
    const project = state.projectRules.get(projectId);
    const route = state.routes.get(envId);
    const upstreams = route?.kind === 'upstream' ? route.upstreams : [];
    // the port's backend as it was (another environment's, if the port was handed on: its servers move)
    const before = previous?.envs.get(port)?.slots ?? [];
    const count = slotCount;
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
    envs.set(port, {
      envId,
      port,
      projectId,
      sticky: state.rules.get(envId)?.stickiness ?? false,
      compression: project?.compression ?? false,
      slots,
    });
  }

  files.set(
    mapFile('sticky'),
    lines([...envs.values()].filter((e) => e.sticky).map((e): [string, string] => [e.envId, '1'])),
  );
  // the environments whose project compresses (be_gz, and be_cdn_gz for the CDN's HITs)
  files.set(
    mapFile('compressed'),
    lines([...envs.values()].filter((e) => e.compression).map((e): [string, string] => [e.envId, '1'])),
  );
  // the environments whose project has an error page: through a hop (hops.ts), `r` or `s`; after pages.map
  // (runtime.ts applies in this order: an environment takes the hop once its page is there)
  files.set(
    mapFile('error-page'),
    lines(
      [...envs.values()].flatMap((e): [string, string][] => {
        const mode = errorPages.get(e.projectId);
        return mode ? [[e.envId, mode]] : [];
      }),
    ),
  );

  return { envs, files, pages };
}

/**
 * The cookie a slot's servers carry (the same for `a` and `b`): a token of the port's backend and the slot,
 * fixed in the configuration (HAProxy cannot change a server's cookie at runtime), the same on every edge.
 */
export function slotCookie(port: number, slot: number): string {
  // every render names every slot of every port (ENVIRONMENT_PORTS x SCALE_MAX x 2 servers), twice an apply: a
  // digest each was most of a render's CPU. Bounded by the range and SCALE_MAX.
  const key = port * 1_000_000 + slot;
  let cookie = slotCookies.get(key);
  if (cookie === undefined) {
    cookie = stickyToken(`port ${port}`, String(slot + 1));
    slotCookies.set(key, cookie);
  }
  return cookie;
}
const slotCookies = new Map<number, string>();

export const backendName = (port: number) => `p${port}`;
export const serverName = (slot: number, side: 'a' | 'b') => `s${slot + 1}${side}`;
