/**
 * Tests of the supervisor (host/provider/) reach web processes the way tenants do: through the edge
 * (HAProxy, the test context's control plane), which serves an environment's public port from the route the
 * supervisor publishes. Each environment is a row the edge reads (its id and port are the supervisor's).
 */
import { publishEdgeRoute, awaitEdges } from '../../db/queries/edge-routes';
import type { PublishedRoute } from '../../host/provider/supervisor';
import type { TestContext } from './context';
import { createEnvironment } from './deploy-fixtures';
import { createProject, createTeam, createUser } from './fixtures';

export function servedByEdge(t: TestContext) {
  return {
    /** A new environment row: its id and public port, for the supervisor. */
    async environment(name?: string): Promise<{ id: string; port: number }> {
      const owner = await createUser(t);
      const team = await createTeam(t, owner);
      const project = await createProject(t, team);
      const env = await createEnvironment(t, project, name ? { name } : {});
      return { id: env.id, port: env.port };
    },
    /** The supervisor's publish hook, as the worker's (activities/index.ts): done once the edge serves it. */
    publish: async (envId: string, route: PublishedRoute | null) => {
      // these tests' releases are not rows (their ids are names): the route is what the edge needs
      await publishEdgeRoute(t.deps.knex, envId, route && ({ ...route, releaseId: null } as unknown as PublishedRoute));
      await awaitEdges(t.deps.knex);
    },
  };
}
