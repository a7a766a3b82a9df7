export { sendTokenExpiryReminders } from './token-reminders';
export { deployEnvironment } from './deploy';
export { buildEnvironment } from './build';
export {
  createService,
  backupEnvironment,
  restoreBackup,
  syncEnvironment,
  resetDatabase,
  scheduledBackups,
} from './data';
export { recheckDomain } from './domains';
export { applyVariables } from './variables';
export { setMaintenance } from './maintenance';
export { clearCdn } from './cdn';
export { pruneExpiredRecords } from './prune-expired';
export { pruneResourceSamples } from './resources';
export { resizeServer, rebootServer } from './machines';
export { endSubscription } from './subscriptions';
export { deliverIntegrationEvent } from './integrations';
