export { createReminderActivities } from './activities';
export type {
  DueReminder,
  FindDueRemindersInput,
  ReminderActivities,
  SendTokenReminderInput,
  SendTokenReminderOutcome,
} from './activities';
export { parseReminderKey, reminderKey, utcDay, REMINDER_INTERVAL_DAYS, REMINDER_LEAD_DAYS } from './keys';
