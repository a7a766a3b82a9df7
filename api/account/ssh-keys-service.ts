import { UniqueViolationError } from 'objection';
import type { Deps } from '../../system/deps';
import { SshKey } from '../../db/models/ssh-key';
import type { Actor } from '../../core/actor';
import { appError, errors } from '../../core/errors';
import type { SshPublicKey } from './ssh-key-format';

const duplicate = (fingerprint: string) =>
  appError('conflict', 'You already added this key', { fields: { public_key: `is already added (${fingerprint})` } });

/** The caller's own keys, oldest first. */
export async function listSshKeys(deps: Deps, actor: Actor): Promise<SshKey[]> {
  return SshKey.query(deps.knex)
    .where({ user_id: actor.user.id })
    .orderBy([{ column: 'created_at' }, { column: 'id' }]);
}

export async function addSshKey(
  deps: Deps,
  actor: Actor,
  input: { name: string; public_key: SshPublicKey },
): Promise<SshKey> {
  const key = input.public_key;
  if (await SshKey.query(deps.knex).findOne({ user_id: actor.user.id, fingerprint: key.fingerprint }))
    throw duplicate(key.fingerprint);
  try {
    return await SshKey.query(deps.knex).insertAndFetch({
      user_id: actor.user.id,
      name: input.name,
      key_type: key.type,
      public_key: key.normalized,
      fingerprint: key.fingerprint,
    });
  } catch (err) {
    if (err instanceof UniqueViolationError) throw duplicate(key.fingerprint);
    throw err;
  }
}

/** Another account's key does not exist for the caller: 404. */
export async function removeSshKey(deps: Deps, actor: Actor, id: string): Promise<void> {
  const removed = await SshKey.query(deps.knex).where({ id, user_id: actor.user.id }).delete();
  if (!removed) throw errors.notFound('SSH key');
}
