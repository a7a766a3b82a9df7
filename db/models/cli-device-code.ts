import { BaseModel } from './base-model';

export class CliDeviceCode extends BaseModel {
  static tableName = 'cli_device_codes';
  device_code_digest!: string;
  user_code!: string;
  status!: 'pending' | 'approved' | 'denied' | 'consumed';
  user_id!: string | null;
  interval_seconds!: number;
  last_polled_at!: Date | null;
  expires_at!: Date;
  created_at!: Date;
}
