/**
 * A live app that starts to keep exiting (its web server's crash record appears: db/queries/machines.ts): the
 * team's activity says so, and the integrations the project's rule for `app.crashing` names hear of it, once per
 * run of exits (its event id is the environment's and the run's start).
 */
import type { Knex } from 'knex';
import type { Client } from '@temporalio/client';
import type { WebCrash } from '../db/queries/machines';
import { recordActivity } from '../db/queries/activity';
import { environmentWithProject } from '../db/queries/environments';
import { storedRule } from '../db/queries/notification-rules';
import { emitIntegrationEvent } from './integration-events';
import { mailProjectEvent } from './event-emails';
import type { Logger } from '../system/logger';
import type { Mailer } from '../system/mail/transport';

/**
 * How a crash's last exit ended, in words: "code 5", "signal SIGKILL". The activity's summary and the Slack line say
 * it so; the `service` client and the console, which import no server code, word it the same.
 */
export function exitWords(crash: { exit_code?: number | null; signal?: string | null }): string {
  return crash.exit_code != null ? `code ${crash.exit_code}` : `signal ${crash.signal ?? 'unknown'}`;
}

export async function recordAppCrashing(
  deps: {
    knex: Knex;
    temporal: Client;
    config: { taskQueue: string; baseUrl: string };
    mailer: Mailer;
    logger: Logger;
  },
  e: { teamId: string; projectId: string; environmentId: string; crash: WebCrash },
): Promise<void> {
  const env = await environmentWithProject(deps.knex, e.environmentId);
  if (!env) return; // deleted meanwhile
  const names = { environment: env.name, project: env.project_name };
  const how = exitWords(e.crash);
  await recordActivity(deps.knex, {
    teamId: e.teamId,
    actor: null,
    kind: 'machines',
    type: 'app_crashing',
    projectId: e.projectId,
    environmentId: e.environmentId,
    summary: `The app of ${names.project}/${names.environment} keeps exiting (${how}); its host restarts it`,
    details: { crash: e.crash },
  });
  const rule = await storedRule(deps.knex, e.projectId, 'app.crashing');
  await emitIntegrationEvent(
    deps,
    {
      teamId: e.teamId,
      event: 'app.crashing',
      eventId: `evt_app_crashing_${e.environmentId}_${Date.parse(e.crash.since)}`,
      data: {
        project: { id: e.projectId, name: names.project },
        environment: { id: e.environmentId, name: names.environment },
        crash: e.crash,
        servers_url: `${deps.config.baseUrl}/api/vc/v1/servers?team=${e.teamId}`,
      },
    },
    rule?.integration_ids,
  );
  if (!rule || rule.email === 'none') return;
  const where = `${names.project} / ${names.environment}`;
  await mailProjectEvent(
    deps,
    { teamId: e.teamId, email: rule.email, event: 'app.crashing' },
    {
      subject: `The app of ${where} keeps exiting`,
      what: `The app of ${where} keeps exiting (${how})`,
      detail:
        'Its host restarts it, and visitors get 503 while no instance runs. What it printed goes to the ' +
        "project's log destination: fix what it says and deploy, or roll back to a release that stayed up.",
      button: { label: 'See the environment', url: `${deps.config.baseUrl}/environments/${e.environmentId}` },
    },
  );
}
