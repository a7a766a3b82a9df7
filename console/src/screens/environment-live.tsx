import type { Answer, TaskSummary } from '../api/types';
import { api, ok } from '../api/client';
import { useLoad } from '../ui/hooks';
import { ErrorNote, Loading, Section, when } from '../ui/parts';
import { duration, shortSha } from '../ui/names';
import { accountWords } from '../lib/task-label';

type Choices = Answer<'getEnvironmentDeployChoices'>;

/** What is live: the release's commit and message, who put it live, when, and how long the deploy took. */
export function Live(props: {
  choices: Choices | undefined;
  error: unknown;
  recent: TaskSummary[] | undefined;
  /** The Variables tab, when saved variable changes are not live yet. */
  variablesPending?: string;
}) {
  const { choices, error } = props;
  const live = choices?.allowed ? choices.live_release : undefined;
  const taskId = live?.went_live?.task_id;
  // Its deploy is usually among the recent tasks: read on its own only when it is not (or they are not there yet).
  const listed = props.recent?.find((t) => t.id === taskId);
  const task = useLoad(
    () =>
      taskId && props.recent && !listed
        ? ok(api.GET('/tasks/{id}', { params: { path: { id: taskId } } }))
        : Promise.resolve(undefined),
    [taskId, !!props.recent, !!listed],
  );
  const t = listed ?? task.data;
  return (
    <Section title="Live now">
      {!choices ? (
        error ? (
          <ErrorNote error={error} />
        ) : (
          <Loading what="the live release" />
        )
      ) : !choices.allowed ? (
        <p class="muted">{NOT_SHOWN[choices.reason] ?? `The live release is not shown: ${choices.message}`}</p>
      ) : !live ? (
        <p>No deploys yet: deploy {choices.git_ref} to start.</p>
      ) : (
        <dl>
          <dt>Commit</dt>
          <dd>
            <code>{shortSha(live.commit_sha)}</code> on {live.git_ref}
            {live.commit_message && <span class="commit-message">{live.commit_message}</span>}
          </dd>
          <dt>Deployed</dt>
          <dd>
            {live.went_live ? when(live.went_live.at) : 'not recorded'}
            {t && <> by {t.account.name ?? accountWords(t.account.via)}</>}
          </dd>
          {t && duration(t.started_at, t.finished_at) && (
            <>
              <dt>Took</dt>
              <dd>
                {duration(t.started_at, t.finished_at)} (<a href={`/tasks/${t.id}`}>its task</a>)
              </dd>
            </>
          )}
          {live.serving?.web && (
            <>
              <dt>Web process</dt>
              <dd>
                <code>{live.serving.web}</code>
              </dd>
            </>
          )}
        </dl>
      )}
      {live && props.variablesPending && (
        <p class="notice" role="status">
          Saved variable changes are not live yet: <a href={props.variablesPending}>apply them</a> or deploy.
        </p>
      )}
      {live?.serving && !live.serving.web && (
        <p class="notice" role="status">
          This release has no web process (no <code>web</code> in its <code>service.yaml</code>, or no{' '}
          <code>service.yaml</code>), so visitors get 503 “no web process”. Add{' '}
          <code>web: "&lt;the command that starts it&gt;"</code> (it gets <code>PORT</code>) to{' '}
          <code>service.yaml</code> at the repository root, then deploy
          {taskId && (
            <>
              ; <a href={`/tasks/${taskId}`}>its deploy's log</a> says more
            </>
          )}
          .
        </p>
      )}
    </Section>
  );
}

/** Why "Live now" shows no release (the deploy choices, which name it, answered blocked). */
const NOT_SHOWN: Record<string, string> = {
  deploy_in_progress: 'A deploy is running: what it puts live shows here when it ends.',
  no_repository: 'Nothing is live: the project has no repository yet.',
  forbidden: 'Your role in this team does not show the live release here; the recent tasks say what was deployed.',
};
