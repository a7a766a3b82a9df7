/**
 * Auto-deploy (CONTRACT "Projects: the rest"): an environment with `auto_deploy` on gets a deploy when the
 * head of its `git_ref` is a commit it neither runs nor was auto-deployed for already. Called by the poller
 * (workflows/auto-deploy.ts, every AUTO_DEPLOY_POLL_SECONDS) and at once by the signed
 * `POST /hooks/git/{project_id}`. The deploy is an ordinary task whose account is `{via: "auto_deploy"}`;
 * while another change runs on the environment it is refused (409) and this answers `busy`: the next round
 * looks again (the head is still not what runs), so a push during a deploy is deployed after it.
 */
import type { Deps } from '../../system/deps';
import { AppError } from '../errors';
import { liveRelease } from '../../db/queries/releases';
import { projectRepositoryColumns, recordRepositoryReachable } from '../../db/queries/projects';
import {
  autoDeployEnvironments,
  autoDeployProjectIds,
  environmentWithProject,
  markAutoDeployChecked,
  setAutoDeploySha,
} from '../../db/queries/environments';
import { projectRepositoryOf } from '../repository';
import { requestTask } from '../deploys';
import { lsRemote } from '../ls-remote';
import { shaOfRef } from '../../host/git';

type AutoDeployStatus = 'started' | 'busy' | 'up_to_date' | 'already_started' | 'ref_not_found' | 'unreachable';

interface AutoDeployOutcome {
  environment_id: string;
  status: AutoDeployStatus;
  /** The head of the environment's git_ref, when it was read. */
  commit: string | null;
  /** The deploy task started (status `started`), or the one that runs (status `busy`). */
  task_id: string | null;
}

const FULL_SHA = /^[0-9a-f]{40}([0-9a-f]{24})?$/i;

/** The commit a git ref names among the remote's refs (as resolveRef reads them); null when none matches. */
function headOf(refs: Array<{ sha: string; ref: string }>, gitRef: string): string | null {
  const want = gitRef.trim() || 'HEAD';
  if (FULL_SHA.test(want)) return want.toLowerCase(); // a fixed commit never moves
  return shaOfRef(refs, want);
}

/**
 * Looks at every environment of the project with auto_deploy on (one `git ls-remote`) and starts the
 * deploys due. Never throws for a repository git cannot read (`unreachable`, and the project's
 * repository_reachable turns false).
 */
export async function autoDeployProject(deps: Deps, projectId: string): Promise<AutoDeployOutcome[]> {
  const { knex } = deps;
  const envs = await autoDeployEnvironments(knex, projectId);
  if (envs.length === 0) return [];
  const project = await projectRepositoryColumns(knex, projectId);
  const repo = project && !project.cancelled_at ? await projectRepositoryOf(knex, deps.secrets, project) : null;
  if (!repo) return [];
  const ls = await lsRemote(repo, deps.config);
  await recordRepositoryReachable(knex, projectId, ls.ok);
  const outcomes: AutoDeployOutcome[] = [];
  for (const env of envs) {
    const out = (status: AutoDeployStatus, commit: string | null, taskId: string | null = null) =>
      outcomes.push({ environment_id: env.id, status, commit, task_id: taskId });
    if (!ls.ok) {
      out('unreachable', null);
      continue;
    }
    await markAutoDeployChecked(knex, env.id);
    const head = headOf(ls.refs, env.git_ref);
    if (!head) {
      out('ref_not_found', null);
      continue;
    }
    if ((await liveRelease(knex, env.id))?.commit_sha === head) {
      out('up_to_date', head);
      continue;
    }
    if (env.auto_deploy_sha === head) {
      out('already_started', head);
      continue;
    }
    const row = await environmentWithProject(knex, env.id);
    if (!row?.auto_deploy) continue; // turned off or deleted meanwhile
    try {
      const task = await requestTask(deps, { via: 'auto_deploy', userId: null }, row, { type: 'deploy' });
      await setAutoDeploySha(knex, env.id, head);
      deps.logger.info({ environmentId: env.id, taskId: task.id, commit: head }, 'auto-deploy started');
      out('started', head, task.id);
    } catch (err) {
      if (!(err instanceof AppError) || (err.code !== 'deploy_in_progress' && err.code !== 'task_in_progress'))
        throw err;
      out('busy', head, (err.extra?.task_id as string | null | undefined) ?? null);
    }
  }
  return outcomes;
}

/** Every project with an environment whose auto_deploy is on (the poller's round). */
export async function autoDeployProjects(deps: Deps): Promise<string[]> {
  return autoDeployProjectIds(deps.knex);
}
