import type { RouteDef } from './lib/define-route';
import { routes as systemRoutes } from './system/routes';
import { routes as accountRoutes } from './account/routes';
import { routes as tokenRoutes } from './tokens/routes';
import { routes as teamRoutes } from './teams/routes';
import { routes as projectRoutes } from './projects/routes';
import { routes as environmentRoutes } from './environments/routes';
import { routes as deployRoutes } from './deploys/routes';
import { routes as taskRoutes } from './tasks/routes';
import { routes as pipelineRoutes } from './pipeline/routes';
import { routes as manifestRoutes } from './manifests/routes';
import { routes as variableRoutes } from './variables/routes';
import { routes as domainRoutes } from './domains/routes';
import { routes as maintenanceRoutes } from './maintenance/routes';
import { routes as projectSettingsRoutes } from './projects/settings-routes';
import { routes as edgeRoutes } from './edge/routes';
import { routes as cdnRoutes } from './cdn/routes';
import { routes as logRoutes } from './logs/routes';
import { routes as machineRoutes } from './machines/routes';
import { routes as storageRoutes } from './storage/routes';
import { routes as reshapeRoutes } from './machines/reshape-routes';
import { routes as billingRoutes } from './billing/routes';
import { routes as integrationRoutes } from './integrations/routes';
import { routes as notificationRoutes } from './notifications/routes';
import { routes as ticketRoutes } from './tickets/routes';
import { routes as registryRoutes } from './registries/routes';
import { routes as termsRoutes } from './terms/routes';
import { projectRuleRoutes } from './notifications/routes';
import { routes as backupRoutes } from './backups/routes';
import { routes as backupTaskRoutes } from './backups/task-routes';
import { routes as pitrRoutes } from './backups/pitr-routes';
import { routes as serviceRoutes } from './services/routes';
import { routes as activityRoutes } from './activity/routes';
import { routes as repositoryHostRoutes } from './repository-hosts/routes';
import { routes as projectLifecycleRoutes } from './projects/lifecycle-routes';

/** The whole route table, one list per area of the spec. */
export function allRoutes(): RouteDef[] {
  return [
    ...systemRoutes,
    ...accountRoutes,
    ...tokenRoutes,
    ...teamRoutes,
    ...projectRoutes,
    ...environmentRoutes,
    ...deployRoutes,
    ...taskRoutes,
    ...pipelineRoutes,
    ...manifestRoutes,
    ...variableRoutes,
    ...domainRoutes,
    ...maintenanceRoutes,
    ...projectSettingsRoutes,
    ...edgeRoutes,
    ...cdnRoutes,
    ...logRoutes,
    ...machineRoutes,
    ...storageRoutes,
    ...reshapeRoutes,
    ...billingRoutes,
    ...integrationRoutes,
    ...notificationRoutes,
    ...ticketRoutes,
    ...registryRoutes,
    ...termsRoutes,
    ...projectRuleRoutes,
    ...backupRoutes,
    ...backupTaskRoutes,
    ...pitrRoutes,
    ...serviceRoutes,
    ...activityRoutes,
    ...repositoryHostRoutes,
    ...projectLifecycleRoutes,
  ] as RouteDef[];
}
