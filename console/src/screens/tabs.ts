/** The sections of each resource, as deep links (CONTRACT "The web console"). */
export const ENVIRONMENT_TABS: [string, string][] = [
  ['', 'Overview'],
  ['/variables', 'Variables'],
  ['/domains', 'Domains'],
  ['/edge', 'Edge'],
  ['/cdn', 'CDN'],
  ['/services', 'Services'],
  ['/backups', 'Backups'],
  ['/resources', 'Resources'],
  ['/machines', 'Machines'],
  ['/storage', 'Storage'],
  ['/logs', 'Logs'],
];

export const PROJECT_TABS: [string, string][] = [
  ['', 'Environments'],
  ['/variables', 'Variables'],
  ['/edge', 'Edge'],
  ['/logs', 'Logs'],
  ['/settings', 'Settings'],
  ['/registries', 'Registries'],
  ['/backup-window', 'Backup window'],
];

export const TEAM_TABS: [string, string][] = [
  ['', 'Projects'],
  ['/people', 'People'],
  ['/settings', 'Settings'],
  ['/billing', 'Billing'],
  ['/integrations', 'Integrations'],
  ['/repository-hosts', 'Repository hosts'],
  ['/backup-destinations', 'Backup destinations'],
  ['/tickets', 'Tickets'],
  ['/activity', 'Activity'],
];
