import { lookup } from 'node:dns/promises';
import { consoleEnv } from './storage/volume-env';
import type { Deps } from '../system/deps';
import { open, seal } from '../system/crypto';
import { aad } from '../db/aad';
import { publishEdgeRoute } from '../db/queries/edge-routes';
import { placedOn } from '../db/queries/host-moves';
import { releaseInstancePort, releaseInstancePortsExcept, takeInstancePort } from '../db/queries/instance-ports';
import { setWebCrash } from '../db/queries/machines';
import { recordAppCrashing } from '../core/app-crashes';
import { untilEdgesApply } from './toolkit/edge-wait';
import { prepareServicesServer, servicesTarget, tenantServicesPort } from '../host/pg-server';
import { ensureAutoDeployPoller } from '../core/temporal-starts';
import { LogShipper } from '../logs/shipper';
import { ErrorTail } from '../logs/error-tail';
import { createLocalProvider } from '../host/provider';
// Every area's factory: activities/<area>/index.ts; an area's second factory in a file named for its topic.
import { createAutoDeployActivities } from './auto-deploy';
import { createProjectStopActivities } from './auto-deploy/project-stop';
import { createBillingActivities } from './billing';
import { createCdnActivities } from './cdn';
import { createCertificateActivities } from './certificates';
import { createDataActivities } from './data';
import { createPitrActivities } from './data/pitr';
import { createBuildActivities, createDeployActivities } from './deploys';
import { createDomainActivities } from './domains';
import { createEnvironmentActivities } from './environments';
import { createIntegrationActivities } from './integrations';
import { createEmailActivities } from './emails';
import { createMachineActivities } from './machines';
import { createMoveActivities } from './machines/moves';
import { createMoveVolumeActivities } from './machines/move-volume';
import { createReshapeActivities } from './machines/reshape';
import { createResourceActivities } from './machines/resources';
import { startResourceSampler, type ResourceSampler } from './machines/sampler';
import { createMaintenanceActivities } from './maintenance';
import { createEnvironmentMaintenanceActivities } from './maintenance/environment';
import { createReminderActivities } from './reminders';
import { createStorageActivities } from './storage';
import { createTaskActivities } from './tasks';
import { createVariableActivities } from './variables';

interface ActivitySet {
  /** Every activity function by name, as the workflows' proxyActivities see them. */
  activities: Record<string, (...args: any[]) => Promise<unknown>>;
  /** Called once the worker exists (e.g. bring supervised web processes back). */
  onWorkerStart?: () => Promise<void>;
  /** Called when the worker stops (e.g. stop supervised processes). */
  onWorkerStop?: () => Promise<void>;
}

/** The activities of every area, created with their dependencies (activities-dependency-injection). */
export async function createActivities(deps: Deps): Promise<ActivitySet> {
  // The local provider: this worker process owns the environments' proxies and web processes, each
  // environment's code in its own sandbox (a loud warning, once, where this host cannot isolate fully).
  // Before tenants can reach it: no database but their own is open to them (template1, postgres, the console's).
  await prepareServicesServer(deps.config).catch((err) =>
    deps.logger.warn(`the services server could not be prepared for tenants: ${(err as Error).message}`),
  );
  const services = await tenantServicesPort(deps.config);
  if (services.reason) deps.logger.warn(services.reason);
  // the services server's address as this host sees it (SERVICES_HOST): where the sandboxes' gateway port goes
  const servicesAt = await lookup(servicesTarget(deps.config), { family: 4 }).then(
    (r) => r.address,
    (err) => {
      deps.logger.warn(`SERVICES_HOST ${deps.config.servicesHost} has no IPv4 address: ${(err as Error).message}`);
      return undefined;
    },
  );
  // The provider (host/provider/): every machine object it makes carries this host's name.
  const host = deps.config.hostName;
  const provider = createLocalProvider({
    config: deps.config,
    // each instance's port on HOST_ADDRESS, recorded per host where everyone sees it (docs/hosts.md)
    instancePorts: {
      take: (envId, slot, skip) =>
        takeInstancePort(deps.knex, { host, range: deps.config.instancePorts, environmentId: envId, slot, skip }),
      release: (port) => releaseInstancePort(deps.knex, host, port),
    },
    services: { port: services.port, trusting: services.trusting ?? null, target: servicesAt },
    warn: (m) => deps.logger.warn(m),
    supervisor: {
      // a live app that keeps exiting, on its web server for the API and the console (servers.crash)
      // (and when a run of exits begins, the team's activity and the integrations that hear of app.crashing)
      onWebCrash: async (envId, crash) => {
        const r = await setWebCrash(deps.knex, envId, host, crash);
        if (r.began && crash)
          await recordAppCrashing(deps, { teamId: r.teamId, projectId: r.projectId, environmentId: envId, crash });
      },
      // current.json keeps the web processes' variables: sealed, like every value at rest
      protectEnv: {
        seal: (text) => seal(deps.secrets, text, aad.supervisorEnv()),
        open: (sealed) => open(deps.secrets, sealed, aad.supervisorEnv()),
      },
      // The edge (processes/edge.ts, its own process) serves the environments' ports from what is published
      // here, so serving goes on while this worker is down or restarting.
      // A switch is done once every edge serves it (never a stale release after the deploy succeeds): past
      // EDGE_TASK_WAIT_SECONDS the task fails naming the edge (a deploy puts the previous route back first).
      publish: async (envId, route, o) => {
        await publishEdgeRoute(deps.knex, envId, route);
        if (o?.wait === false) return;
        await untilEdgesApply(
          // a route that serves the app: also until every edge listens on the environment's port
          {
            knex: deps.knex,
            seconds: deps.config.edgeTaskWaitSeconds,
            environmentId: route?.kind === 'upstream' ? envId : undefined,
          },
          o?.say,
        );
      },
    },
  });
  const releaseUnheldInstancePorts = async () => {
    try {
      await provider.pruneInstanceForwards();
      await releaseInstancePortsExcept(deps.knex, host, provider.supervisor.instancePortsHeld());
    } catch (err) {
      deps.logger.warn({ err: (err as Error).message }, 'instance ports could not be cleaned up');
    }
  };
  const isolation = provider.isolation();
  if (isolation.mode === 'namespaces') deps.logger.info(`tenant isolation: ${isolation.reason}`);
  const { supervisor } = provider;
  let sampler: ResourceSampler | null = null;
  let errorLogs: { shipper: LogShipper; tail: ErrorTail } | null = null;
  const environments = createEnvironmentActivities(deps, provider);
  return {
    activities: {
      ...createReminderActivities(deps),
      ...createTaskActivities(deps),
      ...createDeployActivities(deps, provider),
      ...createBuildActivities(deps, provider),
      ...createDataActivities(deps, provider),
      ...createPitrActivities(deps, provider),
      ...createVariableActivities(deps, provider),
      ...createDomainActivities(deps),
      ...createEnvironmentMaintenanceActivities(deps),
      ...createCdnActivities(deps),
      ...createCertificateActivities(deps),
      ...createMaintenanceActivities(deps),
      ...createResourceActivities(deps),
      ...createMachineActivities(deps, provider),
      ...createMoveActivities(deps, provider),
      ...createMoveVolumeActivities(deps, provider),
      ...createStorageActivities(deps, provider),
      ...createReshapeActivities(deps, provider),
      ...createBillingActivities(deps),
      ...createIntegrationActivities(deps),
      ...createEmailActivities(deps),
      ...createAutoDeployActivities(deps),
      ...createProjectStopActivities(deps, provider),
      retireEnvironmentHost: environments.retireEnvironmentHost,
    },
    async onWorkerStart() {
      await provider.prepare();
      await environments.retireLeftovers();
      // with where each volume and database lives now: a move or reshape may have ended after the last restart
      // not those placed on another host meanwhile (moved while this host was lost): their instances here stop
      const restored = await supervisor.restoreAll({
        current: (envId) => consoleEnv(deps, provider, envId),
        placedHere: (envId) => placedOn(deps.knex, envId, deps.config.hostName),
      });
      for (const r of restored.filter((x) => !x.ok))
        deps.logger.warn({ envId: r.envId, releaseId: r.releaseId }, `could not restore: ${r.message}`);
      // instance ports no instance holds any more (their instances went with no stop: a host restart)
      await releaseUnheldInstancePorts();
      sampler = startResourceSampler(deps, provider, { intervalSeconds: deps.config.resourceSampleSeconds });
      // The auto-deploy poller; a failure here is logged and the worker goes on (the next start tries again).
      await ensureAutoDeployPoller(deps).catch((err) =>
        deps.logger.error({ err: (err as Error).message }, 'auto-deploy poller could not be started'),
      );
      // The web processes' error output, shipped to their project's log destination (logs/).
      const shipper = await new LogShipper({
        knex: deps.knex,
        secrets: deps.secrets,
        outbound: deps.config,
        dataDir: deps.config.dataDir,
        source: 'errors',
        logger: deps.logger,
      }).start();
      errorLogs = { shipper, tail: new ErrorTail(deps.config.dataDir, shipper).start() };
    },
    async onWorkerStop() {
      sampler?.stop();
      await errorLogs?.tail.stop();
      await errorLogs?.shipper.close();
      await supervisor.stopAll();
      // a clean stop: every instance is stopped, so none of this host's instance ports stays forwarded
      await releaseUnheldInstancePorts();
    },
  };
}
