import { BaseModel } from './base-model';

type DeliveryStatus = 'pending' | 'delivered' | 'failed';

/** One event sent to one integration, by its own workflow (workflows/integrations.ts), retried with backoff. */
export class IntegrationDelivery extends BaseModel {
  static tableName = 'integration_deliveries';
  integration_id!: string;
  event_id!: string;
  event!: string;
  payload!: Record<string, unknown>;
  status!: DeliveryStatus;
  attempts!: number;
  response_status!: number | null;
  last_error!: string | null;
  last_attempt_at!: Date | null;
  created_at!: Date;
}
