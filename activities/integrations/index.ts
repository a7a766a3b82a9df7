import { Context } from '@temporalio/activity';
import { Webhook } from 'standardwebhooks';
import type { Deps } from '../../system/deps';
import { open } from '../../system/crypto';
import { Integration } from '../../db/models/integration';
import { IntegrationDelivery } from '../../db/models/integration-delivery';
import { openWebhookUrl, sealWebhookUrls } from '../../db/queries/integrations';
import { slackText } from './slack-message';
import { OutboundRefused, outboundRequest } from '../../host/outbound';
import { Task } from '../../db/models/task';
import { emitIntegrationEvent } from '../../core/integration-events';
import { storedRule } from '../../db/queries/notification-rules';
import { mailPeople, mailProjectEvent } from '../../core/event-emails';
import { projectName } from '../../db/queries/projects';
import { taskEventEmail } from '../../system/mail';
import { aad } from '../../db/aad';
import { hostFault, userFault } from '../toolkit/failures';

interface DeliveryInput {
  deliveryId: string;
}

const TIMEOUT_MS = 10_000;

/** The attempts (1 s, then 2 s and 4 s apart: profiles.delivery) that wait for a delivery's row to be committed. */
const UNCOMMITTED_ATTEMPTS = 3;

/**
 * One attempt at a delivery. A webhook gets the event as JSON, signed as Standard Webhooks specify
 * (`webhook-id` is the event id, the same on every attempt, so receivers can drop repeats); Slack
 * gets `{text}`. A 2xx answer delivers it; anything else fails the attempt and Temporal retries it
 * with backoff. Error messages never carry the URL (a Slack URL is a secret) nor the key.
 */
export function createIntegrationActivities(deps: Deps) {
  return {
    async sendIntegrationDelivery(input: DeliveryInput): Promise<'delivered' | 'gone'> {
      const delivery = await IntegrationDelivery.query(deps.knex).findById(input.deliveryId);
      // The row is written in the transaction that starts this workflow, which commits after the start: the first
      // attempts may run before it. Only a row still missing after them (~7 s) is gone (its integration deleted).
      if (!delivery && Context.current().info.attempt <= UNCOMMITTED_ATTEMPTS)
        throw hostFault('DeliveryNotCommitted', `delivery ${input.deliveryId} is not committed yet`);
      if (!delivery) return 'gone';
      if (delivery.status === 'delivered') return 'delivered';
      await sealWebhookUrls(deps.knex, deps.secrets, [delivery.integration_id]);
      const integration = await Integration.query(deps.knex).findById(delivery.integration_id);
      if (!integration) return 'gone';
      const secret = open(deps.secrets, integration.sealed_secret, aad.integration(integration.id));
      const payload = delivery.payload as { event: string; data: Record<string, unknown> };

      let url: string;
      let body: string;
      const headers: Record<string, string> = {
        'content-type': 'application/json',
        'user-agent': 'HostingConsole-Webhooks/1',
      };
      if (integration.kind === 'webhook') {
        url = openWebhookUrl(deps.secrets, integration);
        body = JSON.stringify(delivery.payload);
        const now = new Date();
        headers['webhook-id'] = delivery.event_id;
        headers['webhook-timestamp'] = String(Math.floor(now.getTime() / 1000));
        headers['webhook-signature'] = new Webhook(secret).sign(delivery.event_id, now, body);
      } else {
        url = secret;
        body = JSON.stringify({ text: slackText(payload.event, payload.data) });
      }

      let status: number | null = null;
      let failure: string | null = null;
      let refused = false;
      try {
        // Through the outbound guard (no internal addresses, checked after DNS); a redirect is not followed.
        const res = await outboundRequest(
          url,
          { method: 'POST', headers, body, timeoutMs: TIMEOUT_MS, maxRedirects: 0, maxBytes: 4096 },
          deps.config,
        );
        status = res.status;
        if (status < 200 || status >= 300) failure = `the receiver answered ${status}`;
      } catch (err) {
        refused = err instanceof OutboundRefused;
        failure = refused
          ? `the receiver's address ${(err as Error).message}`
          : /timed out/.test((err as Error).message)
            ? 'the receiver did not answer in time'
            : 'the receiver could not be reached';
      }
      await IntegrationDelivery.query(deps.knex)
        .findById(delivery.id)
        .patch({
          attempts: deps.knex.raw('attempts + 1') as unknown as number,
          response_status: status,
          last_error: failure,
          last_attempt_at: new Date(),
          ...(failure ? {} : { status: 'delivered' }),
        });
      if (refused) throw userFault('DeliveryRefused', failure!);
      if (failure) throw hostFault('DeliveryFailed', failure);
      return 'delivered';
    },

    /**
     * Tells the team's integrations that a task ended (task.succeeded / task.failed; a failed backup task
     * also backup.failed). The event id is the task's, so a retried call delivers nothing twice.
     * Cancelled tasks are not announced.
     */
    async announceTaskEnd(input: { taskId: string }): Promise<number> {
      const task = await Task.query(deps.knex).findById(input.taskId);
      if (!task || (task.status !== 'succeeded' && task.status !== 'failed')) return 0;
      const [project, environment] = await Promise.all([
        task.project_id ? projectName(deps.knex, task.project_id) : undefined,
        task.environment_id
          ? deps.knex('environments').where({ id: task.environment_id }).first('id', 'name')
          : undefined,
      ]);
      const event = task.status === 'succeeded' ? 'task.succeeded' : 'task.failed';
      // The project's rule for the event, when it has one, names the integrations and who gets an e-mail.
      const rule = task.project_id ? await storedRule(deps.knex, task.project_id, event) : undefined;
      const taskUrl = `${deps.config.baseUrl}/api/vc/v1/tasks/${task.id}`;
      const started = await emitIntegrationEvent(
        deps,
        {
          teamId: task.team_id,
          event,
          eventId: `evt_task_${task.id}`,
          occurredAt: task.finished_at ?? new Date(),
          data: {
            task: {
              id: task.id,
              kind: task.kind,
              type: task.type,
              status: task.status,
              url: taskUrl,
            },
            project: project ?? null,
            environment: environment ?? null,
            ...(task.status === 'failed' && task.error ? { reason: task.error } : {}),
          },
        },
        rule?.integration_ids,
      );
      const backupFailed = task.type === 'backup' && task.status === 'failed';
      const backupRule =
        backupFailed && task.project_id ? await storedRule(deps.knex, task.project_id, 'backup.failed') : undefined;
      const where = [project?.name, environment?.name].filter(Boolean).join(' / ');
      if (backupFailed) {
        // A failed backup is its own event too (backup.failed), heard by the integrations its rule names.
        const backupId = typeof task.params?.backup_id === 'string' ? task.params.backup_id : null;
        started.push(
          ...(await emitIntegrationEvent(
            deps,
            {
              teamId: task.team_id,
              event: 'backup.failed',
              eventId: `evt_backup_failed_${task.id}`,
              occurredAt: task.finished_at ?? new Date(),
              data: {
                backup: { id: backupId, task_id: task.id, task_url: taskUrl },
                project: project ?? null,
                environment: environment ?? null,
                ...(task.error ? { reason: task.error } : {}),
              },
            },
            backupRule?.integration_ids,
          )),
        );
      }
      if (Context.current().info.attempt === 1) {
        // e-mail once (the first attempt): a retried step announces nothing twice
        if (rule)
          await mailPeople(deps, {
            teamId: task.team_id,
            email: rule.email,
            event,
            mail: taskEventEmail({
              outcome: task.status,
              taskType: task.type,
              taskUrl,
              project: project?.name ?? null,
              environment: environment?.name ?? null,
              reason: task.error,
            }),
          });
        if (backupFailed && backupRule)
          await mailProjectEvent(
            deps,
            { teamId: task.team_id, email: backupRule.email, event: 'backup.failed' },
            {
              subject: `No new snapshot of ${where}: its backup failed`,
              what: `The backup of ${where} failed`,
              detail: `${task.error ?? 'The task says why.'} The snapshots taken before it are kept; start a backup again once this is fixed.`,
              button: { label: 'See the task', url: taskUrl },
            },
          );
      }
      return started.length;
    },

    /** After the last attempt: the delivery is failed (GET /integrations/{id} shows it). */
    async failIntegrationDelivery(input: DeliveryInput): Promise<void> {
      await IntegrationDelivery.query(deps.knex)
        .findById(input.deliveryId)
        .where({ status: 'pending' })
        .patch({ status: 'failed' });
    },
  };
}

export type IntegrationActivities = ReturnType<typeof createIntegrationActivities>;
