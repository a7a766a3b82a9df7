import { BaseModel } from './base-model';

export class AccessToken extends BaseModel {
  static tableName = 'access_tokens';
  user_id!: string;
  team_id!: string;
  purpose!: string;
  digest!: string;
  key_id!: string;
  expires_in_days!: number;
  expires_at!: Date;
  last_used_at!: Date | null;
  revoked_at!: Date | null;
  created_at!: Date;

  /** active, expired (from the second it expires) or revoked; computed, never stored. */
  statusAt(now: Date = new Date()): 'active' | 'expired' | 'revoked' {
    if (this.revoked_at) return 'revoked';
    if (this.expires_at.getTime() <= now.getTime()) return 'expired';
    return 'active';
  }

  /** The digest and key id never leave the server. */
  $formatJson(json: Record<string, unknown>) {
    const out = super.$formatJson(json);
    delete out.digest;
    delete out.key_id;
    return out;
  }
}
