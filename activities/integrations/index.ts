export { createIntegrationActivities } from './activities';
export type { DeliveryInput, IntegrationActivities } from './activities';
