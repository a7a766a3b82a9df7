export { createReminderActivities } from './activities';
export type {
  DueReminder,
  FindDueRemindersInput,
  ReminderActivities,
  SendTokenReminderInput,
  SendTokenReminderOutcome,
} from './activities';
export {
  ensureReminderSchedule,
  reminderScheduleAction,
  reminderScheduleSpec,
  REMINDER_WORKFLOW_TYPE,
} from './schedule';
export type { EnsuredSchedule, ReminderScheduleSettings } from './schedule';
export { parseReminderKey, reminderKey, utcDay, REMINDER_INTERVAL_DAYS, REMINDER_LEAD_DAYS } from './keys';
