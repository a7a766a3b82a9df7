import type { Knex } from 'knex';

/**
 * Every API process caches token look-ups for a short while (api/middleware/credential-cache.ts). So
 * that a revocation, a role change or a removed membership is in force on every process at once, these
 * triggers send NOTIFY on channel `vc_credentials` when a row that look-up reads changes: the payload
 * names the table and the ids (`{"table":"memberships","user_id":…,"team_id":…}`), never a secret.
 * Only the access-token columns that decide whether a token works fire (last_used_at writes do not).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE FUNCTION vc_notify_credentials() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
      r record;
    BEGIN
      IF TG_OP = 'INSERT' THEN r := NEW; ELSE r := OLD; END IF;
      IF TG_TABLE_NAME = 'access_tokens' THEN
        PERFORM pg_notify('vc_credentials', json_build_object('table', TG_TABLE_NAME, 'id', r.id, 'user_id', r.user_id, 'team_id', r.team_id)::text);
      ELSIF TG_TABLE_NAME = 'memberships' THEN
        PERFORM pg_notify('vc_credentials', json_build_object('table', TG_TABLE_NAME, 'user_id', r.user_id, 'team_id', r.team_id)::text);
      ELSE
        PERFORM pg_notify('vc_credentials', json_build_object('table', TG_TABLE_NAME, 'user_id', r.id)::text);
      END IF;
      RETURN NULL;
    END $$;
  `);
  await knex.raw(`
    CREATE TRIGGER access_tokens_notify_credentials
      AFTER UPDATE OF revoked_at, expires_at, digest, key_id, user_id, team_id OR DELETE ON access_tokens
      FOR EACH ROW EXECUTE FUNCTION vc_notify_credentials();
    CREATE TRIGGER memberships_notify_credentials
      AFTER INSERT OR UPDATE OR DELETE ON memberships
      FOR EACH ROW EXECUTE FUNCTION vc_notify_credentials();
    CREATE TRIGGER users_notify_credentials
      AFTER UPDATE OR DELETE ON users
      FOR EACH ROW EXECUTE FUNCTION vc_notify_credentials();
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    DROP TRIGGER IF EXISTS access_tokens_notify_credentials ON access_tokens;
    DROP TRIGGER IF EXISTS memberships_notify_credentials ON memberships;
    DROP TRIGGER IF EXISTS users_notify_credentials ON users;
    DROP FUNCTION IF EXISTS vc_notify_credentials();
  `);
}
