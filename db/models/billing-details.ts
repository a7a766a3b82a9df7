import { BaseModel } from './base-model';

/** A team's billing details; `address` holds the fields its country asks for (api/billing/address-format.ts). */
export class BillingDetails extends BaseModel {
  static tableName = 'billing_details';
  static idColumn = 'team_id';
  team_id!: string;
  name!: string;
  email!: string;
  country!: string;
  vat_id!: string | null;
  address!: Record<string, string>;
  created_at!: Date;
  updated_at!: Date;
}
