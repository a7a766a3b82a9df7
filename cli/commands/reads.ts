import { InvalidArgumentError, type Command } from 'commander';
import { contextOf } from '../context';
import { EXIT } from '../errors';
import { exitCodeOf, followTask, reportOutcome, type Task } from '../follow';
import { details, note, out, printJson, status, table } from '../output';
import { environmentLabels, listEnvironments, listProjects, resolveEnvironment, resolveProject } from '../resolve';

/** Reads: tables for people, the API's JSON with --json. */

function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 100) throw new InvalidArgumentError('must be a whole number from 1 to 100');
  return n;
}

const when = (iso: string | null | undefined) => (iso ? iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z') : '');

/**
 * What each environment serves, as its `live` column: the live commit (`(no web process)` after it when its release
 * runs none, so visitors get 503), `none`, `deploying`, or `-` (not shown).
 */
async function liveCommits(ctx: ReturnType<typeof contextOf>, envs: { id: string }[]): Promise<string[]> {
  type Live = { commit_sha: string; serving?: { web: string | null } | null };
  type Choices = { allowed: true; live_release: Live | null } | { allowed: false; reason: string };
  return Promise.all(
    envs.map(async (e) => {
      try {
        const c = await ctx.client.get<Choices>(`/environments/${e.id}/deploy`);
        if (!c.allowed) return c.reason === 'deploy_in_progress' ? 'deploying' : '-';
        if (!c.live_release) return 'none';
        const sha = c.live_release.commit_sha.slice(0, 7);
        return c.live_release.serving && c.live_release.serving.web === null ? `${sha} (no web process)` : sha;
      } catch {
        return '-';
      }
    }),
  );
}

/**
 * Per environment, its live app's crash record in a few words ("exiting: code 5, 7 times"), from GET /servers: a
 * person's sign-in reads it; with a token (403) nothing is added.
 */
async function crashWords(ctx: ReturnType<typeof contextOf>): Promise<Map<string, string>> {
  type Server = {
    environment_id: string;
    role: string;
    crash: { exit_code: number | null; signal: string | null; exits: number } | null;
  };
  const words = new Map<string, string>();
  try {
    const servers = await ctx.client.get<{ data: Server[] }>('/servers');
    for (const s of servers.data) {
      if (s.role !== 'web' || !s.crash) continue;
      const how = s.crash.exit_code !== null ? `code ${s.crash.exit_code}` : `signal ${s.crash.signal ?? 'unknown'}`;
      words.set(s.environment_id, `exiting: ${how}, ${s.crash.exits} time${s.crash.exits === 1 ? '' : 's'}`);
    }
  } catch {
    // not this caller's to read
  }
  return words;
}

function morePages(next: string | null, command: string): void {
  if (next) note(`More: ${command} --before ${next}`);
}

interface Team {
  id: string;
  name: string;
  role: string;
  created_at: string;
}

interface Release {
  id: string;
  environment_id: string;
  git_ref: string;
  commit_sha: string;
  status: string;
  built_at: string | null;
  live: boolean;
}

export function register(program: Command): void {
  program
    .command('teams')
    .description('The teams you belong to, with your role')
    .action(async (_o, cmd: Command) => {
      const ctx = contextOf(cmd);
      const body = await ctx.client.get<{ data: Team[] }>('/teams');
      if (ctx.json) return printJson(body);
      table(
        ['id', 'name', 'role'],
        body.data.map((t) => [t.id, t.name, t.role]),
        'No teams',
      );
    });

  program
    .command('projects')
    .description('The projects you reach')
    .option('--team <id>', "only this team's projects")
    .action(async (opts: { team?: string }, cmd: Command) => {
      const ctx = contextOf(cmd);
      const projects = await listProjects(ctx.client, opts.team);
      if (ctx.json) return printJson({ data: projects });
      table(
        ['id', 'name', 'team', 'repository'],
        projects.map((p) => [p.id, p.name, p.team_id, p.repository?.url]),
        'No projects',
      );
    });

  program
    .command('environments')
    .alias('envs')
    .description('The environments you reach, as project/environment')
    .option('--project <project>', "only this project's (name or id)")
    .option('--team <id>', "only this team's")
    .action(async (opts: { project?: string; team?: string }, cmd: Command) => {
      const ctx = contextOf(cmd);
      const project = opts.project ? await resolveProject(ctx.client, opts.project, opts.team) : undefined;
      const envs = await listEnvironments(ctx.client, { project_id: project?.id, team_id: opts.team });
      if (ctx.json) return printJson({ data: envs });
      const [projects, live, crashes] = await Promise.all([
        listProjects(ctx.client),
        liveCommits(ctx, envs),
        crashWords(ctx),
      ]);
      const names = new Map(projects.map((p) => [p.id, p.name]));
      table(
        ['name', 'id', 'git ref', 'live', 'auto deploy', 'url'],
        envs.map((e, i) => {
          const label = `${names.get(e.project_id) ?? e.project_id}/${e.name}`;
          const crash = crashes.get(e.id);
          return [
            label,
            e.id,
            e.git_ref,
            crash ? `${live[i]} (${crash})` : live[i],
            e.auto_deploy ? 'on' : 'off',
            e.url,
          ];
        }),
        'No environments',
      );
    });

  program
    .command('tasks')
    .description('Tasks, newest first (deploys, builds, ...)')
    .option('--team <id>', "only this team's")
    .option('--project <project>', "only this project's (name or id)")
    .option('--environment <env>', "only this environment's (id or project/environment)")
    .option('--kind <kind>', 'deployments, backups, machines, configuration or maintenance')
    .option('--type <type>', 'deploy, redeploy, rollback, build, ...')
    .option('--limit <n>', 'how many (1-100, default 20)', positiveInt)
    .option('--before <cursor>', 'the next page (as printed after the last)')
    .action(async (opts: Record<string, string | number | undefined>, cmd: Command) => {
      const ctx = contextOf(cmd);
      const project = opts.project
        ? await resolveProject(ctx.client, String(opts.project), opts.team as string)
        : undefined;
      const env = opts.environment ? await resolveEnvironment(ctx.client, String(opts.environment)) : undefined;
      const page = await ctx.client.get<{ data: Task[]; next_before: string | null }>('/tasks', {
        team: opts.team as string | undefined,
        project: project?.id,
        environment: env?.id,
        kind: opts.kind as string | undefined,
        type: opts.type as string | undefined,
        limit: opts.limit as number | undefined,
        before: opts.before as string | undefined,
      });
      if (ctx.json) return printJson(page);
      const labels = page.data.length ? await environmentLabels(ctx.client) : new Map<string, string>();
      table(
        ['id', 'type', 'status', 'environment', 'by', 'created'],
        page.data.map((t) => [
          t.id,
          t.type,
          status(t.status),
          t.environment_id ? (labels.get(t.environment_id) ?? t.environment_id) : '',
          `${t.account.name ?? ''} (${t.account.via})`,
          when(t.created_at),
        ]),
        'No tasks',
      );
      morePages(page.next_before, 'service tasks');
    });

  program
    .command('task')
    .description('One task; --follow prints its log as it is written and exits with its outcome')
    .argument('<id>', 'the task id')
    .option('--follow', 'print the log live until the task ends; exit 0 succeeded, 1 failed, 2 cancelled')
    .option('--log', 'print the log so far after the details')
    .action(async (id: string, opts: { follow?: boolean; log?: boolean }, cmd: Command) => {
      const ctx = contextOf(cmd);
      if (opts.follow) {
        const write = (text: string) => (ctx.json ? process.stderr : process.stdout).write(text);
        const task = await followTask(ctx.client, id, { write, label: `Task ${id}` });
        if (ctx.json) printJson(task);
        else reportOutcome(task);
        process.exitCode = exitCodeOf(task);
        return;
      }
      const task = await ctx.client.get<Task>(`/tasks/${id}`);
      if (ctx.json) return printJson(task);
      const label = task.environment_id ? (await environmentLabels(ctx.client)).get(task.environment_id) : undefined;
      details([
        ['Task', task.id],
        ['Kind', `${task.kind} / ${task.type}`],
        ['Status', status(task.status)],
        ['Environment', label ?? task.environment_id],
        ['Asked by', `${task.account.name ?? '-'} (${task.account.via})`],
        ['Created', when(task.created_at)],
        ['Started', when(task.started_at)],
        ['Finished', when(task.finished_at)],
        ...(task.error ? ([['Error', task.error]] as [string, string][]) : []),
      ]);
      if (opts.log) {
        const log = await ctx.client.request<string>('GET', `/tasks/${id}/log`);
        out();
        process.stdout.write(log.text);
      }
      process.exitCode = EXIT.ok;
    });

  program
    .command('releases')
    .description("A project's releases, newest first; LIVE marks what an environment serves now")
    .argument('<project>', 'project name or id')
    .option('--branch <ref>', 'only releases of this git ref')
    .option('--limit <n>', 'how many (1-100, default 20)', positiveInt)
    .option('--before <cursor>', 'the next page (as printed after the last)')
    .action(async (ref: string, opts: { branch?: string; limit?: number; before?: string }, cmd: Command) => {
      const ctx = contextOf(cmd);
      const project = await resolveProject(ctx.client, ref);
      const page = await ctx.client.get<{ data: Release[]; next_before: string | null }>(
        `/projects/${project.id}/releases`,
        {
          branch: opts.branch,
          limit: opts.limit,
          before: opts.before,
        },
      );
      if (ctx.json) return printJson(page);
      const envs = new Map((await listEnvironments(ctx.client, { project_id: project.id })).map((e) => [e.id, e.name]));
      table(
        ['id', 'environment', 'git ref', 'commit', 'status', 'built', 'live'],
        page.data.map((r) => [
          r.id,
          envs.get(r.environment_id) ?? r.environment_id,
          r.git_ref,
          r.commit_sha.slice(0, 12),
          r.status,
          when(r.built_at),
          r.live ? 'LIVE' : '',
        ]),
        'No releases yet',
      );
      morePages(page.next_before, `service releases ${ref}`);
    });
}
