import { BaseModel } from './base-model';

export class SshKey extends BaseModel {
  static tableName = 'ssh_keys';
  user_id!: string;
  name!: string;
  key_type!: string;
  public_key!: string;
  fingerprint!: string;
  created_at!: Date;
}
