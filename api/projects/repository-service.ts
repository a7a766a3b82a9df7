/**
 * A project's repository (CONTRACT "Projects: the rest"): `{url, default_branch, reachable, checked_at}` from
 * the last access check (connect, reconnect, an auto-deploy round), plus where its git host sends pushes
 * (`webhook_url`). The webhook secret is made when a repository is connected and shown in that answer only
 * (connecting again, even the same URL, makes a new one); it is kept sealed and bound to the project.
 * `POST /hooks/git/{project_id}` is signed as GitHub signs: `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of
 * the raw body>`.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Deps } from '../../system/deps';
import { open, seal } from '../../system/crypto';
import { projectRepositoryOf } from '../../core/repository';
import { appError, errors } from '../../core/errors';
import { lsRemote } from '../../core/ls-remote';
import { aad } from '../../db/aad';

export const SIGNATURE_HEADER = 'x-hub-signature-256';

export interface RepositoryRow {
  id: string;
  repository_url: string | null;
  repository_credentials?: string | null;
  repository_reachable: boolean | null;
  repository_default_branch: string | null;
  repository_checked_at: Date | null;
}

/** A new webhook secret and its sealed form (kept on the project). */
export function newWebhookSecret(deps: Deps, projectId: string): { secret: string; sealed: string } {
  const secret = `whsec_${randomBytes(24).toString('base64url')}`;
  return { secret, sealed: seal(deps.secrets, secret, aad.webhookSecret(projectId)) };
}

export async function getRepository(deps: Deps, projectId: string) {
  const row = await deps.knex('projects').where({ id: projectId }).first();
  if (!row) throw errors.notFound('project');
  return row as RepositoryRow;
}

/**
 * Checks access again with the current URL and credentials (`git ls-remote`, 20 s) and records the outcome:
 * reachable, default branch (where HEAD points), checked_at. 409 no_repository when none is connected.
 */
export async function reconnectRepository(deps: Deps, projectId: string) {
  const row = await deps.knex('projects').where({ id: projectId }).first();
  if (!row) throw errors.notFound('project');
  const repo = await projectRepositoryOf(deps.knex, deps.secrets, row);
  if (!repo) {
    throw errors.conflict('no_repository');
  }
  const check = await lsRemote(repo, deps.config);
  const [updated] = await deps
    .knex('projects')
    .where({ id: projectId })
    .update({
      repository_reachable: check.ok,
      ...(check.ok ? { repository_default_branch: check.head ?? null } : {}),
      repository_checked_at: deps.knex.fn.now(),
    })
    .returning('*');
  return { ...(updated as RepositoryRow), ...(check.ok ? {} : { reason: check.reason }) };
}

/**
 * The hook's signature check (auth 'signature'): 401 without the header; 403 when the project is unknown,
 * has no secret, or the signature does not match the raw body.
 */
export async function checkHookSignature(deps: Deps, signature: string, projectId: string, rawBody: string) {
  if (!signature) {
    throw errors.unauthenticated(
      `Sign the body: ${SIGNATURE_HEADER}: sha256=<hex HMAC-SHA256 with the webhook secret>`,
    );
  }
  const refused = () => appError('forbidden', 'The signature does not match the body and the webhook secret');
  const row = await deps.knex('projects').where({ id: projectId }).first('id', 'webhook_secret');
  if (!row?.webhook_secret) throw refused();
  const secret = open(deps.secrets, row.webhook_secret, aad.webhookSecret(projectId));
  const expected = Buffer.from(`sha256=${createHmac('sha256', secret).update(rawBody, 'utf8').digest('hex')}`);
  const given = Buffer.from(signature.trim().toLowerCase());
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw refused();
}
