import pg from 'pg';
import { Session } from '../db/models/session';
import { randomToken, generateSecret, sessionDigest } from '../api/lib/token-format';
import { positional, seriesSql, stepSeconds, WINDOW_SECONDS } from '../db/queries/resources';
import { percentile, printTable, seedDeveloperWithToken, startBenchSystem } from './harness';
import { sized } from './quick';

/**
 * `GET /environments/{id}/resources?window=90d` on 90 days of minute samples: 129,600 rows for the
 * environment among 50 environments' samples (6.48 million rows, inserted as the sampler does: the hourly
 * sums follow by trigger), against the same SQL through a bare pg client, in the same run. Target: p50
 * under 50 ms. The API is called signed in (a command-line session).
 */
const ENVIRONMENTS = sized(50, 2);
const MINUTES = sized(90 * 24 * 60, 24 * 60);
const REQUESTS = sized(200, 10);

const since = (t: bigint) => Number(process.hrtime.bigint() - t) / 1e6;
const ms = (x: number) => Math.round(x * 10) / 10;

export async function run(): Promise<{ p50: number }> {
  console.log('[bench] resources: starting a Temporal dev server, a database and the API...');
  const sys = await startBenchSystem('resources');
  try {
    const { knex } = sys.deps;
    const { user, team, project } = await seedDeveloperWithToken(sys);
    const envIds: string[] = (
      await knex('environments')
        .insert(
          Array.from({ length: ENVIRONMENTS }, (_, i) => ({
            team_id: team.id,
            project_id: project.id,
            name: `env-${i}`,
            git_ref: 'main',
            port: 30000 + i,
          })),
        )
        .returning('id')
    ).map((r: { id: string }) => r.id);
    const envId = envIds[0];
    const secret = generateSecret('vcs_');
    await Session.query(knex).insert({
      secret_digest: sessionDigest(secret),
      user_id: user.id,
      kind: 'cli',
      csrf_token: randomToken(),
      expires_at: new Date(Date.now() + 3600_000),
    });
    const auth = { authorization: `Bearer ${secret}` };

    console.log(
      `[bench] resources: inserting ${(ENVIRONMENTS * MINUTES).toLocaleString('en')} samples (${MINUTES.toLocaleString('en')} per environment)...`,
    );
    const started = process.hrtime.bigint();
    await knex.raw(
      `INSERT INTO resource_samples (environment_id, at, cpu, memory_bytes, disk_bytes)
       SELECT e, date_trunc('minute', now()) - make_interval(mins => m), random() * 100, (random() * 1e9)::bigint, (1e9 + m)::bigint
         FROM unnest(?::uuid[]) AS e, generate_series(0, ? - 1) AS m`,
      [`{${envIds.join(',')}}`, MINUTES],
    );
    await knex.raw('VACUUM ANALYZE resource_samples');
    await knex.raw('VACUUM ANALYZE resource_hourly');
    const insertMs = since(started);

    const bare = new pg.Pool({ connectionString: sys.deps.config.databaseUrl, max: 2 });
    const params = [envId, stepSeconds('90d'), WINDOW_SECONDS['90d']];
    const SQL = positional(seriesSql('90d'));
    const url = `${sys.apiUrl}/environments/${envId}/resources?window=90d`;
    const check = await fetch(url, { headers: auth });
    const body = (await check.json()) as { series?: { cpu: unknown[] } };
    if (
      check.status !== 200 ||
      !body.series ||
      body.series.cpu.length < sized(400, 1) ||
      body.series.cpu.length > 500
    ) {
      throw new Error(`GET resources answered ${check.status} with ${JSON.stringify(body).slice(0, 200)}`);
    }
    for (let i = 0; i < 20; i++) {
      await bare.query(SQL, params);
      await (await fetch(url, { headers: auth })).arrayBuffer();
    }
    const bareTimes: number[] = [];
    const apiTimes: number[] = [];
    for (let i = 0; i < REQUESTS; i++) {
      let t = process.hrtime.bigint();
      await bare.query(SQL, params);
      bareTimes.push(since(t));
      t = process.hrtime.bigint();
      const res = await fetch(url, { headers: auth });
      await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`GET resources answered ${res.status}`);
      apiTimes.push(since(t));
    }
    await bare.end();
    const p50 = percentile(apiTimes, 0.5);
    printTable('Resources', [
      {
        case: 'bare pg: same SQL, window 90d',
        n: REQUESTS,
        'p50 ms': ms(percentile(bareTimes, 0.5)),
        'p99 ms': ms(percentile(bareTimes, 0.99)),
        target: '',
        result: '',
      },
      {
        case: 'GET /environments/{id}/resources?window=90d',
        n: REQUESTS,
        'p50 ms': ms(p50),
        'p99 ms': ms(percentile(apiTimes, 0.99)),
        target: 'p50 < 50 ms',
        result: `${p50 < 50 ? 'met' : 'NOT met'}; ${(p50 / percentile(bareTimes, 0.5)).toFixed(1)}x bare`,
      },
      {
        case: `insert ${(ENVIRONMENTS * MINUTES).toLocaleString('en')} samples + VACUUM ANALYZE`,
        n: 1,
        'p50 ms': Math.round(insertMs),
        'p99 ms': '',
        target: '',
        result: '',
      },
    ]);
    return { p50 };
  } finally {
    await sys.close();
  }
}
