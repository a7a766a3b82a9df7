/**
 * A project's notification rules: for each event, who gets an e-mail (`members`, `admins`, `none`) and
 * which of the team's integrations hear of it. An event without a stored rule: no e-mail, and every
 * integration of the team that listens for the event hears of it.
 */
import type { Knex } from 'knex';
import { z } from 'zod';
import type { Deps } from '../../system/deps';
import { recordActivity } from '../../db/queries/activity';
import type { Actor } from '../../core/actor';
import { errors } from '../../core/errors';
import { eventLabel, INTEGRATION_EVENTS, type IntegrationEvent } from '../../core/integration-kinds';

export const EMAIL_CHOICES = ['members', 'admins', 'none'] as const;

export const rulesBody = z.strictObject({
  rules: z
    .array(
      z.strictObject({
        event: z.enum(INTEGRATION_EVENTS, { error: `must be one of ${INTEGRATION_EVENTS.join(', ')}` }),
        email: z.enum(EMAIL_CHOICES, { error: `must be one of ${EMAIL_CHOICES.join(', ')}` }),
        integration_ids: z.array(z.uuid('must be integration ids')).max(50),
      }),
    )
    .max(INTEGRATION_EVENTS.length),
});
export type RulesBody = z.infer<typeof rulesBody>;

export const rulesSchema = z.strictObject({
  rules: z.array(
    z.strictObject({ event: z.string(), email: z.enum(EMAIL_CHOICES), integration_ids: z.array(z.uuid()) }),
  ),
});

export interface Rule {
  event: IntegrationEvent;
  email: (typeof EMAIL_CHOICES)[number];
  integration_ids: string[];
}

/** Every event's rule for a project (stored, or the default). */
export async function projectRules(knex: Knex, project: { id: string; team_id: string }): Promise<Rule[]> {
  const [stored, integrations] = await Promise.all([
    knex('project_notification_rules').where({ project_id: project.id }),
    knex('integrations').where({ team_id: project.team_id }).orderBy('created_at').select('id', 'events'),
  ]);
  const byEvent = new Map(stored.map((r) => [r.event, r]));
  return INTEGRATION_EVENTS.map((event) => {
    const r = byEvent.get(event);
    if (r) return { event, email: r.email, integration_ids: r.integration_ids };
    return {
      event,
      email: 'none',
      integration_ids: integrations.filter((i) => i.events.includes(event)).map((i) => i.id),
    };
  });
}

/** Saves the rules given (other events keep theirs); integration ids must be the team's. */
export async function saveRules(deps: Deps, actor: Actor, project: { id: string; team_id: string }, body: RulesBody) {
  const fields: Record<string, string> = {};
  const ids = [...new Set(body.rules.flatMap((r) => r.integration_ids))];
  const known = new Set(
    ids.length
      ? (await deps.knex('integrations').where({ team_id: project.team_id }).whereIn('id', ids).select('id')).map(
          (r) => r.id,
        )
      : [],
  );
  const seen = new Set<string>();
  body.rules.forEach((r, i) => {
    if (seen.has(r.event)) fields[`rules.${i}.event`] = 'is given twice';
    seen.add(r.event);
    if (r.integration_ids.some((id) => !known.has(id)))
      fields[`rules.${i}.integration_ids`] = 'must be integrations of this team';
  });
  if (Object.keys(fields).length) throw errors.invalid(fields);
  await deps.knex.transaction(async (trx) => {
    for (const r of body.rules) {
      await trx('project_notification_rules')
        .insert({ project_id: project.id, event: r.event, email: r.email, integration_ids: r.integration_ids })
        .onConflict(['project_id', 'event'])
        .merge(['email', 'integration_ids']);
    }
    await recordActivity(trx, {
      teamId: project.team_id,
      actor,
      kind: 'configuration',
      type: 'notification_rules_changed',
      projectId: project.id,
      summary: `Notification rules changed for ${body.rules.map((r) => `“${eventLabel(r.event)}”`).join(', ') || 'no event'}`,
    });
  });
  return { rules: await projectRules(deps.knex, project) };
}
