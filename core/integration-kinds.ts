/** The kinds of integration, what each asks for, and the events they can hear of (CONTRACT). */
export const INTEGRATION_EVENTS = [
  'task.succeeded',
  'task.failed',
  'domain.verified',
  'backup.failed',
  'backup.verify_failed',
  'token.expiring',
  'app.crashing',
] as const;
export type IntegrationEvent = (typeof INTEGRATION_EVENTS)[number];

/** Each event in words, for people: the console's rules and integrations, and the activity's summaries. */
const INTEGRATION_EVENT_LABELS: Record<IntegrationEvent, string> = {
  'task.succeeded': 'Task succeeded',
  'task.failed': 'Task failed',
  'domain.verified': 'Domain verified',
  'backup.failed': 'Backup failed',
  'backup.verify_failed': 'Restore drill failed',
  'token.expiring': 'Access token expiring',
  'app.crashing': 'App keeps exiting',
};

/** An event's label; an event this build does not know keeps its name. */
export const eventLabel = (event: string): string =>
  (INTEGRATION_EVENT_LABELS as Record<string, string | undefined>)[event] ?? event;

interface KindField {
  name: string;
  type: 'url' | 'string';
  required: boolean;
  /** Kept sealed; never shown again after it is given. */
  secret: boolean;
  description: string;
}

export const INTEGRATION_KINDS = {
  webhook: {
    name: 'Webhook',
    fields: [
      {
        name: 'url',
        type: 'url',
        required: true,
        secret: false,
        description:
          'Receives a signed POST (Standard Webhooks) per event; kept sealed, shown with query values "redacted"',
      },
    ],
  },
  slack: {
    name: 'Slack',
    fields: [
      {
        name: 'webhook_url',
        type: 'url',
        required: true,
        secret: true,
        description: "The channel's incoming-webhook URL",
      },
    ],
  },
} as const satisfies Record<string, { name: string; fields: readonly KindField[] }>;

export type IntegrationKind = keyof typeof INTEGRATION_KINDS;
export const KIND_NAMES = Object.keys(INTEGRATION_KINDS) as IntegrationKind[];
