import type { Knex } from 'knex';
import type { Deps } from '../../system/deps';
import { FINAL_TASK_STATUSES, TASK_TYPES } from '../../db/vocabulary';
import { markMemberState } from '../../db/queries/next-steps';
import { strongEtag } from '../lib/etag';

const FIRST_ROWS = 5;

interface Row {
  id: string;
  kind: string;
  type: string;
  status: string;
  project_id: string | null;
  environment_id: string | null;
  created_at: Date;
  finished_at: Date | null;
  project_name: string | null;
  environment_name: string | null;
}

const present = (r: Row) => ({
  task_id: r.id,
  kind: r.kind,
  type: r.type,
  status: r.status,
  project_id: r.project_id,
  environment_id: r.environment_id,
  summary: `${(TASK_TYPES as Record<string, { label: string } | undefined>)[r.type]?.label ?? r.type.replace(/_/g, ' ')}${
    r.project_name ? ` of ${[r.project_name, r.environment_name].filter(Boolean).join(' / ')}` : ''
  } ${r.status}`,
  created_at: r.created_at.toISOString(),
  finished_at: r.finished_at?.toISOString() ?? null,
});

function tasks(knex: Knex, teamId: string) {
  return knex('tasks as t')
    .leftJoin('projects as p', 'p.id', 't.project_id')
    .leftJoin('environments as e', 'e.id', 't.environment_id')
    .leftJoin('deleted_environments as de', 'de.id', 't.environment_id')
    .where('t.team_id', teamId);
}

/**
 * The two bells: what is waiting (tasks pending or running) and what finished since the caller last
 * looked (POST /teams/{id}/activity/seen), each a count and its first rows, with an ETag over all of it.
 */
export async function getNotifications(deps: Deps, teamId: string, userId: string) {
  const { knex } = deps;
  const state = await knex('team_member_state').where({ team_id: teamId, user_id: userId }).first('activity_seen_at');
  const seenAt: Date | null = state?.activity_seen_at ?? null;
  const cols = [
    't.id',
    't.kind',
    't.type',
    't.status',
    't.project_id',
    't.environment_id',
    't.created_at',
    't.finished_at',
    'p.name as project_name',
    knex.raw('coalesce(e.name, de.name) as environment_name'),
  ];
  const waiting = () => tasks(knex, teamId).whereIn('t.status', ['pending', 'running']);
  const finished = () => {
    const q = tasks(knex, teamId).whereIn('t.status', FINAL_TASK_STATUSES as string[]);
    return seenAt ? q.where('t.finished_at', '>', seenAt) : q;
  };
  const count = async (q: Knex.QueryBuilder) => Number((await q.count({ n: '*' }))[0].n);
  const [waitingCount, waitingRows, finishedCount, finishedRows] = await Promise.all([
    count(waiting()),
    waiting()
      .select(cols)
      .orderBy([
        { column: 't.created_at', order: 'desc' },
        { column: 't.id', order: 'desc' },
      ])
      .limit(FIRST_ROWS),
    count(finished()),
    finished()
      .select(cols)
      .orderBy([
        { column: 't.finished_at', order: 'desc' },
        { column: 't.id', order: 'desc' },
      ])
      .limit(FIRST_ROWS),
  ]);
  const body = {
    waiting: { count: waitingCount, data: (waitingRows as Row[]).map(present) },
    finished: { count: finishedCount, data: (finishedRows as Row[]).map(present) },
    seen_at: seenAt?.toISOString() ?? null,
  };
  return { body, etag: strongEtag([JSON.stringify(body)]) };
}

export async function markActivitySeen(deps: Deps, teamId: string, userId: string) {
  await markMemberState(deps.knex, teamId, userId, 'activity_seen_at');
}

export async function hideNextSteps(deps: Deps, teamId: string, userId: string) {
  await markMemberState(deps.knex, teamId, userId, 'next_steps_hidden_at');
}
