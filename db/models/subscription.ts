import { BaseModel } from './base-model';

type SubscriptionStatus = 'active' | 'cancelling' | 'ended';

/**
 * One paid thing (a server plan, a service, storage beyond the allowance), known to the team by its
 * `order`. Billed monthly from `started_at`; a cancelled one runs to `cancel_at` (the end of its period).
 */
export class Subscription extends BaseModel {
  static tableName = 'subscriptions';
  order!: string;
  team_id!: string;
  project_id!: string | null;
  environment_id!: string | null;
  /** What kind of thing it pays for (`server`, `service`, `storage`, `volume`, ...), and which one. */
  kind!: string;
  resource_id!: string | null;
  /** A readable line: "Web server, plan small (production of shop)". */
  item!: string;
  /** numeric comes back from PostgreSQL as a string. */
  monthly_price!: string;
  currency!: string;
  status!: SubscriptionStatus;
  started_at!: Date;
  cancel_at!: Date | null;
  cancelled_by!: string | null;
  ended_at!: Date | null;
  created_at!: Date;
}
