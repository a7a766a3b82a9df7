/** One readable Slack line per event (mrkdwn), from the event's data. */
import { exitWords } from '../../core/app-crashes';

const esc = (s: unknown) =>
  String(s ?? '')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;');

interface Named {
  id?: string;
  name?: string;
}
interface EventData {
  task?: { id?: string; type?: string; status?: string; url?: string };
  project?: Named;
  environment?: Named;
  domain?: { hostname?: string };
  token?: { purpose?: string; expires_at?: string };
  team?: Named;
  reason?: string;
  crash?: { exit_code?: number | null; signal?: string | null };
}

const TASK_WORDS: Record<string, string> = {
  deploy: 'Deploy',
  redeploy: 'Redeploy',
  rollback: 'Rollback',
  build: 'Build',
  backup: 'Backup',
  restore: 'Restore',
  verify: 'Restore drill',
};

function where(d: EventData, preposition = 'of'): string {
  const parts = [d.project?.name, d.environment?.name].filter(Boolean).map(esc);
  return parts.length ? ` ${preposition} *${parts.join(' / ')}*` : '';
}

function link(text: string, url?: string): string {
  return url ? `<${esc(url)}|${esc(text)}>` : esc(text);
}

export function slackText(event: string, data: EventData): string {
  const task = data.task ?? {};
  const what = TASK_WORDS[task.type ?? ''] ?? (task.type ? `Task ${esc(task.type)}` : 'Task');
  switch (event) {
    case 'task.succeeded':
      return `:white_check_mark: ${what}${where(data)} succeeded (${link(`task ${task.id ?? ''}`.trim(), task.url)})`;
    case 'task.failed':
      return `:x: ${what}${where(data)} failed${data.reason ? `: ${esc(data.reason)}` : ''} (${link(`task ${task.id ?? ''}`.trim(), task.url)})`;
    case 'domain.verified':
      return `:lock: Domain *${esc(data.domain?.hostname)}* is verified${where(data, 'for')}`;
    case 'backup.failed':
      return `:warning: Backup${where(data)} failed${data.reason ? `: ${esc(data.reason)}` : ''}`;
    case 'backup.verify_failed':
      return `:rotating_light: Restore drill${where(data)} failed${data.reason ? `: ${esc(data.reason)}` : ''}${data.task?.url ? ` (${link(`task ${data.task.id ?? ''}`.trim(), data.task.url)})` : ''}`;
    case 'app.crashing':
      return `:rotating_light: The app${where(data)} keeps exiting (${esc(exitWords(data.crash ?? {}))}): its host restarts it, visitors get 503 meanwhile`;
    case 'token.expiring':
      return `:hourglass: Access token "${esc(data.token?.purpose)}"${data.team?.name ? ` of *${esc(data.team.name)}*` : ''} expires on ${esc(data.token?.expires_at?.slice(0, 10))}`;
    default:
      return `${esc(event)}${where(data)}`;
  }
}
