import { AccessToken } from '../db/models/access-token';
import { generateSecret, tokenDigest } from '../api/lib/token-format';
import { sized } from './quick';
import { percentile, printTable, seedDeveloperWithToken, spawnApiProcess, startBenchSystem } from './harness';

const ROUNDS = sized(40, 5);
const TARGET_MS = 100;

/**
 * How soon another API process refuses a revoked token (system/credential-cache.ts: each API process caches a
 * token's look-up for up to 60 s and drops it on PostgreSQL's NOTIFY from the tables' triggers). B is an API
 * process as npm start runs it; each round a fresh token is looked up on B (so B holds it), revoked by a
 * committed write from another process (the trigger's NOTIFY, as the API's DELETE /me/tokens/{id} makes it on
 * any API process), and B is asked again until it answers 401. The time is from the commit's return to B's
 * 401. Baseline in the same run: one `GET /me` round trip on B with a cached token (what one probe costs).
 * Target: within 100 ms
 * (test/api/limits/credential-cache.test.ts proves the refusal comes from the notification; this says how soon).
 */
export async function run(): Promise<{ p50: number }> {
  console.log('[bench] credentials: starting a Temporal dev server, a database and an API process...');
  const sys = await startBenchSystem('credentials');
  let b: Awaited<ReturnType<typeof spawnApiProcess>> | undefined;
  try {
    const { knex, secrets } = sys.deps;
    const { user, team } = await seedDeveloperWithToken(sys);
    b = await spawnApiProcess(sys);
    const apiUrl = b.apiUrl;
    const me = (token: string) =>
      fetch(`${apiUrl}/me`, { headers: { authorization: `Bearer ${token}` } }).then(async (r) => {
        await r.arrayBuffer();
        return r.status;
      });

    const propagation: number[] = [];
    const probes: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const token = generateSecret('vcp_');
      const row = await AccessToken.query(knex).insertAndFetch({
        user_id: user.id,
        team_id: team.id,
        purpose: `bench-${round}`,
        digest: tokenDigest(token, secrets.tokenKey.key),
        key_id: secrets.tokenKey.id,
        expires_in_days: 7,
        expires_at: new Date(Date.now() + 7 * 86_400_000),
      });
      // looked up, then served from B's cache
      if ((await me(token)) !== 200) throw new Error('the fresh token was refused by B');
      const began = performance.now();
      if ((await me(token)) !== 200) throw new Error('the cached token was refused by B');
      probes.push(performance.now() - began);

      await knex('access_tokens').where({ id: row.id }).update({ revoked_at: new Date() });
      const committed = performance.now();
      for (;;) {
        const status = await me(token);
        const elapsed = performance.now() - committed;
        if (status === 401) {
          propagation.push(elapsed);
          break;
        }
        if (elapsed > 60_000) throw new Error(`B still answered ${status} a minute after the revocation`);
      }
    }

    const ms = (x: number) => x.toFixed(1);
    printTable(`A revoked token on another API process (${ROUNDS} rounds; ms)`, [
      {
        case: 'one GET /me on B, token cached (the baseline)',
        p50: ms(percentile(probes, 0.5)),
        p99: ms(percentile(probes, 0.99)),
      },
      {
        case: 'from the revocation commit to B answering 401',
        p50: ms(percentile(propagation, 0.5)),
        p99: ms(percentile(propagation, 0.99)),
      },
    ]);
    const worst = Math.max(...propagation);
    console.log(
      `refused by B within ${ms(worst)} ms at worst, ${ms(percentile(propagation, 0.5) / percentile(probes, 0.5))}x a probe at p50 (target <= ${TARGET_MS} ms): ${worst <= TARGET_MS ? 'met' : 'NOT met'}`,
    );
    return { p50: percentile(propagation, 0.5) };
  } finally {
    await b?.stop();
    await sys.close();
  }
}
