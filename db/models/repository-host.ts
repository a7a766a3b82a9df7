import { BaseModel } from './base-model';

/**
 * A team's repository host: `https` (user name and token) or `ssh` (a key pair the console made).
 * `sealed_secret` is the token or the OpenSSH private key, sealed (core/repository-hosts.ts).
 */
export class RepositoryHost extends BaseModel {
  static tableName = 'repository_hosts';
  team_id!: string;
  kind!: 'https' | 'ssh';
  /** https: `name[:port]` as in a URL's authority (lower case); ssh: the host name. */
  host!: string;
  username!: string | null;
  public_key!: string | null;
  sealed_secret!: string;
  created_by!: string | null;
  created_at!: Date;
  updated_at!: Date;

  $formatJson(json: Record<string, unknown>) {
    const out = super.$formatJson(json);
    delete out.sealed_secret;
    return out;
  }
}
