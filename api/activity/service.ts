import type { Knex } from 'knex';
/**
 * A team's activity (CONTRACT "Activity"): every task (as an event of its kind and type) and every change
 * that is not a task (activity_events), newest first, one keyset page at a time over (at, id).
 */
import type { Deps } from '../../system/deps';
import { encodeCursor, pageOf } from '../lib/pagination';
import { cursorTimeSql } from '../../db/cursor-sql';
import { ACTIVITY_CURSOR, type ActivityQuery } from './schemas';
import { TASK_TYPES } from '../../db/vocabulary';

interface Row {
  id: string;
  at: Date;
  cursor_at: string;
  user_id: string | null;
  user_name: string | null;
  via: string;
  kind: string;
  type: string;
  project_id: string | null;
  environment_id: string | null;
  task_id: string | null;
  address: string | null;
  summary: string;
}

export async function listActivity(deps: Deps, teamId: string, q: ActivityQuery) {
  const { knex } = deps;
  const filter = (b: Knex.QueryBuilder, prefix: string) => {
    b.where(`${prefix}.team_id`, teamId);
    if (q.project) b.where(`${prefix}.project_id`, q.project);
    if (q.environment) b.where(`${prefix}.environment_id`, q.environment);
    if (q.kind) b.where(`${prefix}.kind`, q.kind);
    if (q.type) b.where(`${prefix}.type`, q.type);
    if (q.before)
      b.whereRaw(`(${prefix}.created_at, ${prefix}.id) < (?::timestamptz, ?::uuid)`, [q.before.at, q.before.id]);
    return b
      .orderBy([
        { column: `${prefix}.created_at`, order: 'desc' },
        { column: `${prefix}.id`, order: 'desc' },
      ])
      .limit(q.limit + 1);
  };
  const tasks = filter(
    knex('tasks as t')
      .leftJoin('environments as e', 'e.id', 't.environment_id')
      .leftJoin('deleted_environments as de', 'de.id', 't.environment_id')
      .select(
        't.id',
        't.created_at as at',
        't.account_user_id as user_id',
        't.account_via as via',
        't.kind',
        't.type',
        't.project_id',
        't.environment_id',
        't.id as task_id',
        knex.raw('NULL::text AS address'),
        knex.raw(`t.type || coalesce(' on ' || coalesce(e.name, de.name), '') || ' (' || t.status || ')' AS summary`),
      ),
    't',
  );
  const events = filter(
    knex('activity_events as a')
      .whereNotNull('a.kind')
      .select(
        'a.id',
        'a.created_at as at',
        'a.user_id',
        knex.raw(`coalesce(a.actor_via, 'system') AS via`),
        'a.kind',
        'a.type',
        'a.project_id',
        'a.environment_id',
        'a.task_id',
        'a.address',
        knex.raw(`coalesce(a.summary, a.type) AS summary`),
      ),
    'a',
  );
  const rows = (await knex
    .select('x.*', 'u.name as user_name', knex.raw(`${cursorTimeSql('x.at')} AS cursor_at`))
    .from(knex.raw('((?) UNION ALL (?)) AS x', [tasks, events]))
    .leftJoin('users as u', 'u.id', 'x.user_id')
    .orderBy([
      { column: 'x.at', order: 'desc' },
      { column: 'x.id', order: 'desc' },
    ])
    .limit(q.limit + 1)) as Row[];
  const { page, more } = pageOf(rows, q.limit);
  const last = page.at(-1);
  return {
    data: page.map((r) => ({
      id: r.id,
      at: new Date(r.at).toISOString(),
      actor: { id: r.user_id, name: r.user_name, via: r.via },
      kind: r.kind,
      type: r.type,
      project_id: r.project_id,
      environment_id: r.environment_id,
      task_id: r.task_id,
      address: r.address,
      summary: taskWords(r),
    })),
    next_before: more && last ? encodeCursor(ACTIVITY_CURSOR, [last.cursor_at, last.id]) : null,
  };
}

/** A task's summary ("<type> on <environment> (<status>)") names its type as the task registry labels it. */
function taskWords(r: Row): string {
  const label =
    r.id === r.task_id ? (TASK_TYPES as Record<string, { label: string } | undefined>)[r.type]?.label : undefined;
  return label && r.summary.startsWith(r.type) ? label + r.summary.slice(r.type.length) : r.summary;
}
