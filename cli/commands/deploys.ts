import type { Command } from 'commander';
import { contextOf, type Ctx } from '../context';
import { ApiError, CliError, EXIT } from '../errors';
import { exitCodeOf, followTask, reportOutcome, waitForTask, type Task } from '../follow';
import { note, out, printJson, status } from '../output';
import { resolveEnvironment, type Environment } from '../resolve';

/** Deploy, redeploy, rollback and build an environment; cancel a task. */

type TaskType = 'deploy' | 'redeploy' | 'rollback' | 'build';

interface StartOptions {
  skipSteps?: boolean;
  wait?: boolean;
  queue?: boolean;
}

const DESCRIPTIONS: Record<TaskType, string> = {
  deploy: "Deploy the head of the environment's git ref (build unless built, deploy steps, go live)",
  redeploy: 'Put the live release out again, deploy steps included unless --skip-steps',
  rollback: 'Bring back the release that ran before the last successful deployment (code only)',
  build: "Build the head of the environment's git ref without putting it live",
};

/**
 * Asks for the task. A 409 naming a running task exits 3 naming it; with --queue the client waits
 * for that task to end and asks again (another may have started meanwhile: it waits for that too).
 */
async function requestTask(ctx: Ctx, env: Environment, type: TaskType, opts: StartOptions): Promise<Task> {
  const body = opts.skipSteps ? { skip_steps: true } : {};
  for (;;) {
    try {
      return await ctx.client.startTask<Task>(`/environments/${env.id}/${type}`, body);
    } catch (err) {
      const running = err instanceof ApiError ? err.runningTaskId : undefined;
      if (!running) throw err;
      if (!opts.queue) {
        throw new CliError(
          `Refused: task ${running} is in progress on ${env.name} (${(err as ApiError).message}). ` +
            `Follow it with \`service task ${running} --follow\`, or repeat with --queue to ${type} once it ends.`,
          EXIT.busy,
        );
      }
      note(`Task ${running} is in progress on ${env.name}; waiting for it to end (--queue)...`);
      const ended = await waitForTask(ctx.client, running, `Waiting for task ${running}`);
      note(`Task ${running} ${ended.status}; asking for the ${type} again.`);
    }
  }
}

async function start(cmd: Command, type: TaskType, ref: string, opts: StartOptions): Promise<void> {
  const ctx = contextOf(cmd);
  const env = await resolveEnvironment(ctx.client, ref);
  const task = await requestTask(ctx, env, type, opts);
  if (!opts.wait) {
    if (ctx.json) return printJson(task);
    out(`Task ${task.id} (${type} of ${env.name}) is ${status(task.status)}.`);
    note(`Follow it with: service task ${task.id} --follow`);
    return;
  }
  note(`Task ${task.id} (${type} of ${env.name}) is ${task.status}; its log follows.`);
  const write = (text: string) => (ctx.json ? process.stderr : process.stdout).write(text);
  const ended = await followTask(ctx.client, task.id, { write, label: `${type} ${env.name} (task ${task.id})` });
  if (ctx.json) printJson(ended);
  reportOutcome(ended);
  process.exitCode = exitCodeOf(ended);
}

export function register(program: Command): void {
  for (const type of ['deploy', 'redeploy', 'rollback', 'build'] as const) {
    const cmd = program
      .command(type)
      .description(DESCRIPTIONS[type])
      .argument('<env>', 'the environment: its id, project/environment, or a name only one environment has');
    if (type === 'deploy' || type === 'redeploy') cmd.option('--skip-steps', "skip the manifest's deploy steps");
    cmd
      .option('--wait', 'print the log live and exit with the outcome: 0 succeeded, 1 failed, 2 cancelled')
      .option('--queue', 'when another task holds the environment, wait for it to end, then ask again (else exit 3)')
      .action((ref: string, opts: StartOptions, c: Command) => start(c, type, ref, opts));
  }

  program
    .command('cancel')
    .description('Cancel a task nothing has started yet (pending); needs `service login`')
    .argument('<id>', 'the task id')
    .action(async (id: string, _o, cmd: Command) => {
      const ctx = contextOf(cmd);
      const task = await ctx.client.post<Task>(`/tasks/${id}/cancel`);
      if (ctx.json) return printJson(task);
      out(`Task ${task.id} (${task.type}) is ${status(task.status)}.`);
    });
}
