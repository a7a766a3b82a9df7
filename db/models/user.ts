import { BaseModel } from './base-model';

export class User extends BaseModel {
  static tableName = 'users';
  email!: string;
  name!: string;
  password_hash!: string;
  email_confirmed_at!: Date | null;
  created_at!: Date;
  updated_at!: Date;

  /** Never show the password hash. */
  $formatJson(json: Record<string, unknown>) {
    const out = super.$formatJson(json);
    delete out.password_hash;
    return out;
  }
}
