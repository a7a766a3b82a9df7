/**
 * The `service` client's own behaviour against the real API (no worker): how it is started, what it
 * says when it cannot do a thing, 429s and network failures, validate, variables, completion.
 * Failed credentials block an address for 3 s here (FAILED_CREDENTIALS_*), to meet a real 429.
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createServer, connect, type Server } from 'node:net';
import path from 'node:path';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { useTestContext } from '../helpers/context';
import { createAccessToken, createProject, createTeam, createUser } from '../helpers/fixtures';
import { createEnvironment } from '../helpers/deploy-fixtures';
import { freePort } from '../helpers/ports';
import { answerDroppingRelay } from '../helpers/answer-dropping-relay';
import { cliHome, runCli } from '../helpers/cli';
import { storeCliSession } from '../helpers/cli-session';
import { readStore, writeStore } from '../../cli/config';
import { generateSecret } from '../../api/lib/token-format';
import { processVariables, recordVariablesLive } from '../../db/queries/variables';

const t = useTestContext({ env: { FAILED_CREDENTIALS_LIMIT: '2', FAILED_CREDENTIALS_BLOCK_SECONDS: '3' } });
// Each test runs the client (a node process) several times: slow on a busy machine.
vi.setConfig({ testTimeout: 120_000 });
let token: string;
let home: Record<string, string>;
let envLabel: string;
let envId: string;
let owner: Awaited<ReturnType<typeof createUser>>;
let project: Awaited<ReturnType<typeof createProject>>;
const asToken = () => ({ ...home, VC_TOKEN: token });

beforeAll(async () => {
  owner = await createUser(t);
  const team = await createTeam(t, owner);
  project = await createProject(t, team, { name: 'shop' });
  const env = await createEnvironment(t, project, { name: 'staging' });
  envId = env.id;
  envLabel = 'shop/staging';
  token = await createAccessToken(t, owner, team);
  home = cliHome(t);
  writeFileSync(path.join(home.HOME, 'service.yaml'), 'build: ["npm ci"]\nweb: node server.js\n');
});

/**
 * A person's sign-in (an apply is not a token's), stored for a relay's origin as `service login` there would; the
 * relay's origin is answered.
 */
async function signedInThrough(relayed: string): Promise<string> {
  await storeCliSession(t, owner, home);
  const store = readStore({ ...process.env, ...home });
  store.sessions[relayed] = store.sessions[t.baseUrl];
  writeStore(store, { ...process.env, ...home });
  return relayed;
}

describe('the service bin', () => {
  it('`npx service --help` works from the repository', async () => {
    const res = await runCli(t, [], {}, { command: ['npx', '--offline', 'service', '--help'] });
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toContain('Usage: service [options] [command]');
    expect(res.stdout).toContain('deploy [options] <env>');
    expect(res.stdout).toContain('Exit codes:');
  });

  it('a usage error exits 4 with the usage hint, no stack trace', async () => {
    const res = await runCli(t, ['deploy']);
    expect(res.code).toBe(4);
    expect(res.stderr).toContain("missing required argument 'env'");
    expect(res.stderr).toContain('service <command> --help');
  });

  it('completion bash completes commands and their options in a real bash', async () => {
    const script = (await runCli(t, ['completion', 'bash'])).stdout;
    const file = path.join(home.HOME, 'completion.sh');
    writeFileSync(file, script);
    const complete = (words: string) =>
      execFileSync(
        'bash',
        [
          '-c',
          `source ${file}; COMP_WORDS=(${words}); COMP_CWORD=$((\${#COMP_WORDS[@]}-1)); _service_complete; echo "\${COMPREPLY[*]}"`,
        ],
        {
          encoding: 'utf8',
        },
      ).trim();
    expect(complete('service dep')).toBe('deploy');
    expect(complete('service deploy prod --sk')).toBe('--skip-steps');
    expect(complete('service vars im')).toBe('import');
    expect(complete('service vars import x --ov')).toBe('--overwrite');
  });
});

describe('credentials', () => {
  it('without a sign-in or VC_TOKEN it says to run service login', async () => {
    const res = await runCli(t, ['teams'], { ...home });
    expect(res.code).toBe(4);
    expect(res.stderr).toContain(`Not signed in to ${t.baseUrl}: run \`service login --api ${t.baseUrl}\``);
  });

  it('VC_TOKEN must be a vcp_ token; one that does not work names what to do', async () => {
    const wrongKind = await runCli(t, ['teams'], { ...home, VC_TOKEN: 'vcs_abc' });
    expect(wrongKind.code).toBe(4);
    expect(wrongKind.stderr).toContain('VC_TOKEN must be a personal access token (vcp_...)');
    const unknown = await runCli(t, ['teams'], { ...home, VC_TOKEN: generateSecret('vcp_') });
    expect(unknown.code).toBe(4);
    expect(unknown.stderr).toContain(
      'VC_TOKEN was refused (The token does not work): issue a new personal access token',
    );
  });

  it('--api wins over VC_API and may carry the API path', async () => {
    const res = await runCli(t, ['teams', '--json', '--api', `${t.apiUrl}/`], {
      ...asToken(),
      VC_API: 'http://127.0.0.1:9',
    });
    expect(res.code, res.stderr).toBe(0);
    expect(JSON.parse(res.stdout).data).toHaveLength(1);
  });
});

describe('429 and network failures', () => {
  it('waits out a 429 per Retry-After and repeats the request', async () => {
    // Credentials that do not work block this address for 3 s (429 with Retry-After on every credential). The
    // client reaches the API through a loopback relay that holds its first connection until a block has at least
    // a second left, however slowly the client starts.
    const bad = () => fetch(`${t.apiUrl}/me`, { headers: { authorization: 'Bearer vcp_doesnotwork' } });
    await bad();
    expect((await bad()).status).toBe(401);
    const blocked = await fetch(`${t.apiUrl}/me`, { headers: { authorization: `Bearer ${token}` } });
    expect(blocked.status).toBe(429);
    expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThan(0);
    const apiPort = Number(new URL(t.baseUrl).port);
    let held = false;
    const relay: Server = createServer((socket) => {
      const first = !held;
      held = true;
      socket.pause();
      void (async () => {
        while (first) {
          const r = await bad();
          if (r.status === 429 && Number(r.headers.get('retry-after')) >= 2) break;
          await new Promise((ok) => setTimeout(ok, 50));
        }
        socket.pipe(connect(apiPort, '127.0.0.1')).pipe(socket);
        socket.resume();
      })();
    });
    const port = await freePort();
    await new Promise<void>((r) => relay.listen(port, '127.0.0.1', r));
    try {
      const run = runCli(t, ['teams', '--json'], { ...asToken(), VC_API: `http://127.0.0.1:${port}` });
      await run.waitFor(/Rate limited by the console: waiting \d+ s \(Retry-After\)/, 'stderr');
      const res = await run;
      expect(res.code, res.stderr).toBe(0);
      expect(JSON.parse(res.stdout).data).toHaveLength(1);
    } finally {
      relay.close();
    }
  });

  it('retries a read with backoff while the console cannot be reached', async () => {
    // A port where nothing listens yet; a loopback relay to the API starts there once the client has failed.
    const port = await freePort();
    const run = runCli(t, ['projects', '--json'], { ...asToken(), VC_API: `http://127.0.0.1:${port}` });
    await run.waitFor(/Cannot reach http:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\); trying again/, 'stderr');
    const apiPort = Number(new URL(t.baseUrl).port);
    const relay: Server = createServer((socket) => socket.pipe(connect(apiPort, '127.0.0.1')).pipe(socket));
    await new Promise<void>((r) => relay.listen(port, '127.0.0.1', r));
    try {
      const res = await run;
      expect(res.code, res.stderr).toBe(0);
      expect(JSON.parse(res.stdout).data.map((p: { name: string }) => p.name)).toEqual(['shop']);
    } finally {
      relay.close();
    }
  });

  it('a task start whose answer was lost is sent again with its Idempotency-Key, and starts one task', async () => {
    // A loopback relay to the API that drops the connection when the answer to the first POST comes back (the task
    // started, the client never heard); everything else (the client's reads first) is relayed as it is.
    const relay = await answerDroppingRelay(Number(new URL(t.baseUrl).port), (head) => head.startsWith('POST '));
    const relayed = await signedInThrough(relay.url);
    try {
      const res = await runCli(t, ['vars', 'apply', envLabel, '--json'], { ...home, VC_API: relayed });
      expect(res.code, res.stderr).toBe(0);
      expect(res.stderr).toMatch(/trying again/);
      const tasks = await t.deps.knex('tasks').where({ environment_id: envId, type: 'apply_variables' }).select('id');
      expect(tasks).toHaveLength(1);
      expect(JSON.parse(res.stdout).id).toBe(tasks[0].id);
      expect(relay.dropped()).toBe(true);
      expect(relay.matched()).toBeGreaterThanOrEqual(2);
    } finally {
      relay.close();
    }
  });

  it('a write whose answer was lost is sent again with its Idempotency-Key, and changes things once', async () => {
    const env = await createEnvironment(t, project, { name: 'lost-answer' });
    const relay = await answerDroppingRelay(Number(new URL(t.baseUrl).port), (head) =>
      head.startsWith(`POST /api/vc/v1/environments/${env.id}/variables `),
    );
    const relayed = await signedInThrough(relay.url);
    try {
      const res = await runCli(t, ['vars', 'set', 'shop/lost-answer', 'LOST_ANSWER=kept', '--json'], {
        ...home,
        VC_API: relayed,
      });
      expect(res.code, res.stderr).toBe(0);
      expect(res.stderr).toMatch(/trying again/);
      expect(JSON.parse(res.stdout).data.map((v: { name: string }) => v.name)).toEqual(['LOST_ANSWER']);
      const rows = await t.deps.knex('variables').where({ environment_id: env.id, name: 'LOST_ANSWER' });
      expect(rows).toHaveLength(1);
      expect(relay.dropped()).toBe(true);
      expect(relay.matched()).toBeGreaterThanOrEqual(2);
    } finally {
      relay.close();
    }
  });

  it('signing in is not repeated when the console cannot be reached: exit 4 naming --api', async () => {
    const port = await freePort();
    const res = await runCli(t, ['login', '--no-browser'], { ...home, VC_API: `http://127.0.0.1:${port}` });
    expect(res.code).toBe(4);
    expect(res.stderr).toContain(`Cannot reach the console at http://127.0.0.1:${port}`);
    expect(res.stderr).not.toContain('trying again');
  });
});

describe('refusals', () => {
  it("a refusal that names no running task exits 4 with the API's message", async () => {
    const res = await runCli(t, ['deploy', envLabel, '--wait'], asToken());
    expect(res.code).toBe(4);
    expect(res.stderr).toMatch(/^Error: .*repository/m);
    expect(res.stderr).not.toMatch(/\n\s+at /);
  });
});

describe('service validate', () => {
  it('a valid service.yaml: exit 0 and the manifest as it will be read', async () => {
    const res = await runCli(t, ['validate'], asToken(), { cwd: home.HOME });
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toContain('service.yaml is valid.');
    expect(res.stdout).toMatch(/build:\s+npm ci/);
  });

  it('an invalid one: exit 4 naming each fault with its line', async () => {
    const file = path.join(home.HOME, 'bad.yaml');
    writeFileSync(file, 'build: ["npm ci", 3]\ncolour: blue\n');
    const res = await runCli(t, ['validate', file], asToken());
    expect(res.code).toBe(4);
    expect(res.stderr).toMatch(/build\.1: .*\(line 1\)/);
    expect(res.stderr).toMatch(/colour: unknown key \(line 2\)/);
  });

  it('a missing file says which', async () => {
    const res = await runCli(t, ['validate', 'nowhere.yaml'], asToken(), { cwd: home.HOME });
    expect(res.code).toBe(4);
    expect(res.stderr).toContain('No file nowhere.yaml');
  });
});

describe('service vars', () => {
  it('set, list (secrets hidden), import and unset against the variables API', async () => {
    // Variables need a person's sign-in (the spec's token reach): a token is refused, a stored
    // command-line session works.
    const refused = await runCli(t, ['vars', 'list', envLabel], asToken());
    expect(refused.code).toBe(4);
    expect(refused.stderr).toMatch(/service login/);
    await storeCliSession(t, owner, home);
    const asPerson = () => home;
    const set = await runCli(t, ['vars', 'set', envLabel, 'GREETING=hello=world', 'LEVEL=3'], asPerson());
    expect(set.code, set.stderr).toBe(0);
    const secret = await runCli(t, ['vars', 'set', envLabel, 'API_KEY=s3cr3t-value', '--secret'], asPerson());
    expect(secret.code, secret.stderr).toBe(0);
    expect(secret.stdout).not.toContain('s3cr3t-value');
    const list = await runCli(t, ['vars', 'list', envId, '--json'], asPerson());
    const vars = Object.fromEntries(
      JSON.parse(list.stdout).data.map((v: { name: string; value: string | null }) => [v.name, v.value]),
    );
    expect(vars).toEqual({ GREETING: 'hello=world', LEVEL: '3', API_KEY: null });
    const table = await runCli(t, ['vars', 'list', envLabel], asPerson());
    expect(table.stdout).toMatch(/API_KEY\s+\[secret\]/);
    expect(table.stdout).not.toContain('s3cr3t-value');

    const dotenv = path.join(home.HOME, '.env');
    writeFileSync(dotenv, '# comment\nLEVEL=4\nexport NEW_ONE="two\\nlines"\n');
    const skipped = await runCli(t, ['vars', 'import', envLabel, dotenv, '--json'], asPerson());
    expect(JSON.parse(skipped.stdout)).toMatchObject({ created: ['NEW_ONE'], skipped: ['LEVEL'] });
    const overwritten = await runCli(t, ['vars', 'import', envLabel, dotenv, '--overwrite', '--json'], asPerson());
    expect(JSON.parse(overwritten.stdout)).toMatchObject({ updated: ['LEVEL'] });

    const unset = await runCli(t, ['vars', 'unset', envLabel, 'LEVEL', 'NEW_ONE'], asPerson());
    expect(unset.code, unset.stderr).toBe(0);
    const after = await runCli(t, ['vars', 'list', envLabel, '--json'], asPerson());
    expect(
      JSON.parse(after.stdout)
        .data.map((v: { name: string }) => v.name)
        .sort(),
    ).toEqual(['API_KEY', 'GREETING']);
    const bad = await runCli(t, ['vars', 'set', envLabel, 'VC_X=1'], asPerson());
    expect(bad.code).toBe(4);
    expect(bad.stderr).toMatch(/name: /);
  });

  it('list says on stderr whether the running app has the set: after a change, that `vars apply` puts it live', async () => {
    await storeCliSession(t, owner, home);
    // the processes as a go-live records them (workflows/variables-reach-processes.test.ts: through a real apply)
    const env = await t.deps.knex('environments').where({ id: envId }).first();
    const [release] = await t.deps
      .knex('releases')
      .insert({
        team_id: env.team_id,
        project_id: env.project_id,
        environment_id: envId,
        git_ref: 'main',
        commit_sha: 'c'.repeat(40),
        status: 'ready',
      })
      .returning('id');
    await t.deps.knex('environments').where({ id: envId }).update({ live_release_id: release.id });
    const { vars } = await processVariables(t.deps.knex, t.deps.secrets, envId);
    await recordVariablesLive(t.deps.knex, t.deps.secrets, envId, vars);
    const running = await runCli(t, ['vars', 'list', envLabel], home);
    expect(running.code, running.stderr).toBe(0);
    expect(running.stderr).toMatch(/^The app runs with these \(started with them \S+\)\.$/m);
    expect((await runCli(t, ['vars', 'set', envLabel, 'GREETING=changed'], home)).code).toBe(0);
    const changed = await runCli(t, ['vars', 'list', envLabel], home);
    expect(changed.stderr).toContain(`not live yet; \`service vars apply ${envLabel}\` restarts it with these.`);
    // stdout stays the table alone
    expect(changed.stdout).not.toContain('live');
  });
});
