export { createBillingActivities } from './activities';
export type { BillingActivities, EndSubscriptionInput } from './activities';
