/**
 * A blocked agent is in force for the very User-Agent that was seen while its rule was on its way in. The edge
 * changes its agents ACL at runtime as HAProxy does it atomically: `prepare acl`, `add acl @v`, `commit acl @v`.
 * HAProxy 2.6 caches a regex match's result per sample (tune.pattern.cache-size), and a commit that only adds to
 * an empty ACL does not clear it: a client whose request came between the map's commit (its project now
 * matched against the ACL) and the ACL's kept being let through, with the same User-Agent, after the rule was
 * in force and the write had answered 200 (edge-in-force-start's flaky failure in CI). The edge runs without
 * that cache. The interleaving is made here by hand on the edge's own HAProxy, in the order of the edge's
 * apply, with a request in the window.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { haproxyPaths } from '../../edge/haproxy/paths';
import { runtimeCommand } from '../../edge/runtime-command';
import { useTestContext } from '../helpers/context';
import { createDeployWorld } from '../helpers/deploy-fixtures';
import { sessionAgent } from '../helpers/fixtures';

const t = useTestContext({ edge: true });
let w: Awaited<ReturnType<typeof createDeployWorld>>;
let owner: Awaited<ReturnType<typeof sessionAgent>>;

const visit = async (userAgent: string) =>
  (await fetch(`http://127.0.0.1:${w.environment.port}/`, { headers: { 'user-agent': userAgent } })).status;

beforeAll(async () => {
  w = await createDeployWorld(t);
  owner = await sessionAgent(t, w.owner);
}, 60_000);

afterAll(async () => {
  // the edge's own files back in HAProxy (its model holds no agent: a change makes it write both again)
  await owner?.patch(`/projects/${w.project.id}/edge`, { blocked_user_agents: ['afterbot'] });
  await owner?.patch(`/projects/${w.project.id}/edge`, { blocked_user_agents: [] });
});

describe('a blocked agent and the requests that came while it was applied', () => {
  it('blocks the User-Agent that a request sent between the map and the ACL, from the commit on', async () => {
    // no agent blocked: the project is not in agent-projects.map and agents.acl is empty
    const none = await owner.patch(`/projects/${w.project.id}/edge`, { blocked_user_agents: [] });
    expect(none.status, none.text).toBe(200);
    const paths = haproxyPaths(t.dataDir);
    const map = join(paths.maps, 'agent-projects.map');
    const acl = join(paths.acls, 'agents.acl');
    expect(readFileSync(acl, 'utf8')).toBe('');

    // the edge's apply of `blocked_user_agents: ['cachebot']`, step by step (runtime.ts: the map, then the ACL)
    const version = async (file: string, kind: 'map' | 'acl') => {
      const prepared = await runtimeCommand(paths.admin, `prepare ${kind} ${file}`);
      const v = /New version created: (\d+)/.exec(prepared)?.[1];
      expect(v, prepared).toBeDefined();
      return v;
    };
    const m = await version(map, 'map');
    expect(await runtimeCommand(paths.admin, `add map @${m} ${map} ${w.project.id} 1`)).toBe('');
    expect(await runtimeCommand(paths.admin, `commit map @${m} ${map}`)).toBe('');
    // a request in the window: its User-Agent is matched against the ACL as it still is (empty): let through
    expect(await visit('CacheBot/1.0')).not.toBe(403);
    const a = await version(acl, 'acl');
    expect(await runtimeCommand(paths.admin, `add acl @${a} ${acl} ^${w.project.id}\\\\|.*cachebot`)).toBe('');
    expect(await visit('CacheBot/1.0')).not.toBe(403);
    expect(await runtimeCommand(paths.admin, `commit acl @${a} ${acl}`)).toBe('');
    // from the commit on, the same User-Agent is refused (with the pattern cache: let through, as it was seen)
    expect(await visit('CacheBot/1.0')).toBe(403);
    expect(await visit('cachebot')).toBe(403);
  }, 60_000);
});
