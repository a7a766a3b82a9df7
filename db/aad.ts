/**
 * What each sealed value is bound to: the additional data of its AES-GCM seal (system/crypto.ts `seal` and
 * `open`), so that a sealed value copied to another row, column or scope does not open there. One entry per
 * kind of sealed secret. The strings are part of the data already sealed: never change one.
 */
export const aad = {
  /** backup_destinations.secrets_sealed */
  backupDestination: (destinationId: string) => `backup-destination:${destinationId}`,
  /** environments.backup_key_sealed */
  backupKey: (environmentId: string) => `backup-key:${environmentId}`,
  /** integrations.sealed_secret (the signing secret, or a Slack webhook URL) */
  integration: (integrationId: string) => `integration:${integrationId}`,
  /** integrations.sealed_url (a webhook integration's URL) */
  integrationUrl: (integrationId: string) => `integration-url:${integrationId}`,
  /** repository_hosts.sealed_secret */
  repositoryHost: (hostId: string) => `repository_hosts.sealed_secret:${hostId}`,
  /** projects.repository_credentials */
  repositoryCredentials: (projectId: string) => `projects.repository_credentials:${projectId}`,
  /** projects.webhook_secret */
  webhookSecret: (projectId: string) => `projects.webhook_secret:${projectId}`,
  /** project_logs.url_sealed */
  projectLogs: (projectId: string) => `project_logs:${projectId}`,
  /** registry credentials of a project, per registry host */
  registry: (projectId: string, host: string) => `registry:${projectId}:${host}`,
  /** variables.value_sealed: bound to its scope and name */
  variable: (scope: { projectId: string; environmentId: string | null }, name: string) =>
    `variable:${scope.projectId}:${scope.environmentId ?? '-'}:${name}`,
  /** services.password_sealed and next_password_sealed */
  servicePassword: (serviceId: string) => `service-password:${serviceId}`,
  /** certificates' private keys, per domain */
  certificateKey: (domainId: string) => `certificate:${domainId}`,
  /** the ACME account key, per directory */
  acmeAccount: (directoryUrl: string) => `acme-account:${directoryUrl}`,
  /** the supervisor's state file's environment of each web process */
  supervisorEnv: () => 'supervisor-env',
  /** idempotency_keys.answer_sealed: the answer a repeated request is given again */
  idempotencyAnswer: (keyId: string) => `idempotency:${keyId}`,
};
