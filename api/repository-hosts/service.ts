import { randomUUID } from 'node:crypto';
import { UniqueViolationError } from 'objection';
import type { Deps } from '../../system/deps';
import { RepositoryHost } from '../../db/models/repository-host';
import { recordActivity } from '../../db/queries/activity';
import { sealHostSecret } from '../../core/repository-hosts';
import type { Actor } from '../../core/actor';
import { errors } from '../../core/errors';
import { newSshKeyPair } from './keys';
import { HOST_KINDS, KIND_FIELDS, type CreateBody } from './schemas';
import type { ModelObject } from 'objection';

export function newHostChoices() {
  return { kinds: HOST_KINDS.map((kind) => ({ kind, fields: KIND_FIELDS[kind] })) };
}

export async function listRepositoryHosts(deps: Deps, teamId: string) {
  const rows = await RepositoryHost.query(deps.knex).where({ team_id: teamId }).orderBy(['host', 'kind']);
  return rows;
}

/**
 * Adds a repository host. https: the token is sealed (never answered again); ssh: a new Ed25519 key pair,
 * the private key sealed and the public key answered to add on the host. The team's projects on that
 * host without credentials of their own are then cloned with it (core/repository-hosts.ts).
 */
export async function createRepositoryHost(deps: Deps, actor: Actor, teamId: string, body: CreateBody) {
  const id = randomUUID();
  const keys = body.kind === 'ssh' ? newSshKeyPair(`vc-repository-host-${id.slice(0, 8)}`) : null;
  const secret = body.kind === 'https' ? body.token : keys!.privateKey;
  try {
    const row = await deps.knex.transaction(async (trx) => {
      const inserted = await RepositoryHost.query(trx).insertAndFetch({
        id,
        team_id: teamId,
        kind: body.kind,
        host: body.host,
        username: body.kind === 'https' ? body.username : null,
        public_key: keys?.publicKey ?? null,
        sealed_secret: sealHostSecret(deps.secrets, id, secret),
        created_by: actor.user.id,
      } as Partial<RepositoryHost>);
      await recordActivity(trx, {
        teamId,
        actor,
        kind: 'configuration',
        type: 'repository_host_added',
        summary: `Repository host ${body.host} (${body.kind}) added`,
        details: { repository_host_id: id, kind: body.kind, host: body.host },
      });
      return inserted;
    });
    return row;
  } catch (err) {
    if (err instanceof UniqueViolationError)
      throw errors.invalid({ host: `already has a ${body.kind} repository host in this team` });
    throw err;
  }
}

export async function deleteRepositoryHost(deps: Deps, actor: Actor, row: ModelObject<RepositoryHost>) {
  await deps.knex.transaction(async (trx) => {
    await RepositoryHost.query(trx).deleteById(row.id);
    await recordActivity(trx, {
      teamId: row.team_id,
      actor,
      kind: 'configuration',
      type: 'repository_host_removed',
      summary: `Repository host ${row.host} (${row.kind}) removed`,
      details: { repository_host_id: row.id, kind: row.kind, host: row.host },
    });
  });
}
