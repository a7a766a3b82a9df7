/**
 * The OpenAPI document's top-level tags: every tag a route uses is declared there with this description
 * (api/lib/openapi.ts). A route with a tag missing here still works; `npm run check` (Spectral,
 * `tag-description`) then fails until the tag is described.
 */
export const TAG_DESCRIPTIONS: Record<string, string> = {
  system: 'The API itself: this OpenAPI document, its readable page, and the health of its components.',
  account:
    'Sign-up and its e-mailed confirmation, browser sessions with CSRF, re-authentication, the command-line sign-in (device flow), SSH keys and the caller (`GET /me`).',
  'access tokens':
    'Personal access tokens (`vcp_`): issued for one team for 7, 30 or 90 days, shown once, listed with revoked and expired ones, revoked.',
  teams: 'Teams, their settings and next steps, people, invitations, memberships and roles.',
  projects:
    'Projects: creation, listing, the repository connection and its git hook, environments of a project, settings, registries, terms, cancelling and deleting.',
  environments: 'Environments: listing, reading, changing (`git_ref`, `auto_deploy`) and deleting.',
  deploys:
    'Deploy, redeploy, rollback and build: each starts a task (202); one change at a time per environment (409 while another runs).',
  tasks:
    'Every long change is a task: the list (filters, cursor, ETag), one task, its log, and cancelling one not yet started.',
  pipeline: 'What a pipeline reads before deploying: releases, what may be deployed to an environment and from where.',
  manifests: 'Checking a `service.yaml` manifest, alone or for an environment.',
  variables:
    'Project and environment variables (sealed at rest, secrets write-only), `.env` parsing and import, and applying them to running processes as a task.',
  domains:
    "Custom domains: added by hostname, verified by a DNS TXT record, moved between a project's environments, removed; limited by the project's allowance.",
  maintenance: 'Switching an environment into maintenance (the edge answers 503 with a note) and back, as a task.',
  edge: "The edge's rules: the project's (blocked addresses and agents, rate limit, HSTS, compression, pages) and the environment's (allowed addresses, password, stickiness).",
  cdn: "The edge's cache per environment, and clearing it (a task that ends once every edge has applied it).",
  logs: "Log forwarding: the project's destination (HTTP collector or syslog) and where an environment's logs go.",
  machines:
    'Servers and their plans: resize, reboot, scale, reshape (a database server of its own), build machines and resource usage.',
  storage:
    "An environment's storage allowance, its split between the database and files disks, moving a disk, volumes grown.",
  billing: 'Billing details, address formats, subscriptions and cancelling them at the end of their period.',
  integrations: 'Signed webhooks and Slack: connecting, changing and disconnecting them, and their deliveries.',
  notifications:
    "The bells (what is waiting and what finished since last looked), marking them seen, and who hears of a project's events.",
  tickets: 'Support tickets with screenshots, and replies.',
  backups:
    'Backup destinations, backup windows (schedules), snapshots, downloads, restore, sync, reset-database and the backup key.',
  services: "An environment's database services (PostgreSQL): choices, preview with prices, creation and listing.",
  activity: "A team's activity log: every task and every change that is not a task, newest first.",
  'repository hosts':
    "A team's private git hosts (https with a token, ssh with a key the console makes), used by its projects' repositories.",
};
