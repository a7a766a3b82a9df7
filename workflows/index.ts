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
export { verifyBackup, runRestoreDrills } from './drills';
export { recheckDomain } from './domains';
export { applyVariables } from './variables';
export { setMaintenance } from './maintenance';
export { clearCdn } from './cdn';
export { issueCertificate, renewCertificates } from './certificates';
export { pruneExpiredRecords } from './prune-expired';
export { pruneResourceSamples } from './resources';
export { reshapeEnvironment, discardOldDatabase } from './reshape';
export { resizeServer, rebootServer, scaleEnvironment } from './machines';
export { moveStorage, discardStorage, growVolume } from './storage';
export { moveEnvironment, watchHosts } from './moves';
export { endSubscription } from './subscriptions';
export { deliverIntegrationEvent } from './integrations';
export { deliverEventEmail } from './emails';
export { pollAutoDeploys } from './auto-deploy';
export { stopProjectEnvironments } from './project-stop';
export { retireEnvironment } from './environments';
export { archiveBackups, dropKeptDatabaseLater } from './pitr';
