import { TASK_TYPES } from '../../../db/vocabulary';

/** What the console calls a task of this type: its label in the task registry (db/vocabulary.ts). */
export function taskLabel(type: string): string {
  const def = (TASK_TYPES as Record<string, { label: string } | undefined>)[type];
  return def ? def.label : type.replaceAll('_', ' ');
}

/** Who asked for a task that no person asked for (an account with no name): in words. */
export const accountWords = (via: string) =>
  via === 'auto_deploy' ? 'an automatic deploy' : via === 'schedule' ? 'a schedule' : 'the system';
