import type { Knex } from 'knex';

interface StoredRule {
  event: string;
  email: 'members' | 'admins' | 'none';
  integration_ids: string[];
}

/** A project's stored rule for one event (api/notifications/rules.ts); none: the team-wide default applies. */
export async function storedRule(knex: Knex, projectId: string, event: string): Promise<StoredRule | undefined> {
  return knex('project_notification_rules')
    .where({ project_id: projectId, event })
    .first('event', 'email', 'integration_ids');
}
