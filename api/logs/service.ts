/**
 * Log forwarding settings (CONTRACT "Logs"). A save checks the destination with the outbound guard (an
 * internal address is refused, 422, unless OUTBOUND_ALLOWED_HOSTS lists it), makes a test send whose
 * outcome is `can_send`/`last_error`, and keeps the http URL sealed. Answers never show credentials:
 * the URL loses its userinfo and its query values (see `displayUrl`).
 */
import { checkOutboundHost, checkOutboundUrl, OutboundRefused } from '../../host/outbound';
import { recordActivity } from '../../db/queries/activity';
import {
  DEFAULT_KEEP_DAYS,
  destinationColumns,
  getLogSettings,
  openDestination,
  type LogSettingsRow,
} from '../../db/queries/log-settings';
import { describeFailure, sendLines, type Destination } from '../../logs/send';
import type { Deps } from '../../system/deps';
import type { Actor } from '../../core/actor';
import { errors } from '../../core/errors';
import { awaitEdges } from '../../db/queries/edge-routes';
import { environmentServerIds } from '../../db/queries/machines';

const LOG_DESTINATION_WAIT_MS = 2000;

/** A project's log settings with its destination opened (its URL still holds its credentials: the presenter hides them). */
export interface LogSettingsRecord {
  row: LogSettingsRow | undefined;
  destination: Destination | null;
}

const withDestination = (deps: Deps, row: LogSettingsRow | undefined): LogSettingsRecord => ({
  row,
  destination: openDestination(deps.secrets, row) ?? null,
});

export async function getProjectLogs(deps: Deps, projectId: string) {
  return withDestination(deps, await getLogSettings(deps.knex, projectId));
}

/** 422 naming the field when the guard refuses the destination's host. */
async function guard(deps: Deps, dest: Destination): Promise<void> {
  try {
    if (dest.kind === 'http') await checkOutboundUrl(dest.url, deps.config);
    else await checkOutboundHost(dest.host, deps.config);
  } catch (err) {
    if (!(err instanceof OutboundRefused)) throw err;
    throw errors.invalid({ [dest.kind === 'http' ? 'destination.url' : 'destination.host']: err.message });
  }
}

export async function updateProjectLogs(
  deps: Deps,
  actor: Actor,
  project: { id: string; team_id: string; name: string },
  input: { destination?: Destination | null; keep_days_on_machine?: number },
) {
  const current = await getLogSettings(deps.knex, project.id);
  const dest = input.destination !== undefined ? input.destination : openDestination(deps.secrets, current);
  if (input.destination) await guard(deps, input.destination);
  let canSend = false;
  let lastError: string | null = null;
  if (dest) {
    try {
      await sendLines(
        dest,
        [
          {
            time: new Date().toISOString(),
            environment_id: null,
            type: 'test',
            project_id: project.id,
            message: `a test line from the hosting console for project ${project.name}`,
          },
        ],
        deps.config,
      );
      canSend = true;
    } catch (err) {
      lastError = describeFailure(err);
    }
  }
  const patch: Record<string, unknown> = {
    ...(input.destination !== undefined ? destinationColumns(deps.secrets, project.id, input.destination) : {}),
    ...(input.keep_days_on_machine !== undefined ? { keep_days_on_machine: input.keep_days_on_machine } : {}),
    can_send: canSend,
    last_error: lastError,
  };
  const row = await deps.knex.transaction(async (trx) => {
    const [saved] = await trx('project_log_settings')
      .insert({ project_id: project.id, ...patch, ...(canSend ? { last_sent_at: trx.fn.now() } : {}) })
      .onConflict('project_id')
      .merge({ ...patch, ...(canSend ? { last_sent_at: trx.fn.now() } : {}), updated_at: trx.fn.now() })
      .returning('*');
    const parts: string[] = [];
    if (input.destination !== undefined)
      parts.push(
        input.destination ? `destination ${input.destination.name} (${input.destination.kind})` : 'no destination',
      );
    if (input.keep_days_on_machine !== undefined) parts.push(`machines keep ${input.keep_days_on_machine} days`);
    await recordActivity(trx, {
      teamId: project.team_id,
      actor,
      kind: 'configuration',
      type: 'log_forwarding_changed',
      projectId: project.id,
      summary: `log forwarding of project ${project.name}: ${parts.join(', ')}`,
    });
    return saved as LogSettingsRow;
  });
  // the edges' request log uses it for the next line: answered once every edge has read it, or after 2 s (an
  // edge away reads it when it is back; CONTRACT "Logs" has no 503 here)
  await awaitEdges(deps.knex, LOG_DESTINATION_WAIT_MS);
  return withDestination(deps, row);
}

export async function getEnvironmentLogs(deps: Deps, env: { id: string; project_id: string }) {
  const row = await getLogSettings(deps.knex, env.project_id);
  const servers = await environmentServerIds(deps.knex, env.id);
  const keep = row?.keep_days_on_machine ?? DEFAULT_KEEP_DAYS;
  return {
    destination: row?.kind && row.name ? { kind: row.kind, name: row.name } : null,
    can_send: row?.can_send ?? false,
    machines: servers.map((s: { id: string }) => ({ server_id: s.id, keeps_days: keep })),
  };
}
