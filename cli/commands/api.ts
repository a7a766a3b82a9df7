import { readFileSync } from 'node:fs';
import { once } from 'node:events';
import type { Readable } from 'node:stream';
import type { Command } from 'commander';
import { contextOf, type Ctx } from '../context';
import { CliError } from '../errors';
import { exitCodeOf, followTask, reportOutcome, type Task } from '../follow';
import { note, out, printJson } from '../output';
import { resolveEnvironment, resolveProject } from '../resolve';

/**
 * `service api PATH`: any call of the API with the caller's sign-in or token, so that everything the console does
 * can be done from a terminal (the spec's "everything possible in the console is then possible from there") and
 * scripted, the way `gh api` does for GitHub. The client's own rules hold: a write carries an Idempotency-Key and
 * is retried safely, 429s are waited out, a refusal exits 3 or 4 with the API's message.
 */

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
const API_PREFIX = '/api/vc/v1';

interface ApiOptions {
  method?: string;
  rawField?: string[];
  field?: string[];
  input?: string;
  env?: string;
  project?: string;
  paginate?: boolean;
  wait?: boolean;
}

const collect = (value: string, previous: string[] | undefined) => [...(previous ?? []), value];

function readInput(file: string, what: string): string {
  try {
    return file === '-' ? readFileSync(0, 'utf8') : readFileSync(file, 'utf8');
  } catch (err) {
    throw new CliError(`Cannot read ${what} ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
}

/** A -F value as JSON would have it: true, false, null, a number, @file's text, else the string itself. */
function typedValue(raw: string, key: string): unknown {
  if (raw === 'true') return true;
  if (raw === 'false') return false;
  if (raw === 'null') return null;
  if (/^-?\d+(\.\d+)?$/.test(raw)) return Number(raw);
  if (raw.startsWith('@')) return readInput(raw.slice(1), `the value of ${key} from`);
  return raw;
}

/** `a[b][]` -> ['a', 'b', ''] (an empty part appends to an array). */
function keyPath(key: string): string[] {
  const m = /^([^[\]]+)((?:\[[^[\]]*\])*)$/.exec(key);
  if (!m)
    throw new CliError(`"${key}" is not a field name: use name, name[key] or name[] (e.g. -F pages[error]=@500.html)`);
  return [m[1], ...[...m[2].matchAll(/\[([^[\]]*)\]/g)].map((p) => p[1])];
}

/** Sets body[a][b] = value along the key's path, creating objects and arrays on the way. */
function place(body: Record<string, unknown>, key: string, value: unknown): void {
  const parts = keyPath(key);
  let at: Record<string, unknown> | unknown[] = body;
  parts.forEach((part, i) => {
    const last = i === parts.length - 1;
    const next = last ? value : parts[i + 1] === '' ? [] : {};
    if (Array.isArray(at)) {
      if (part !== '') throw new CliError(`"${key}" mixes a list and named keys`);
      at.push(next);
      at = next as Record<string, unknown>;
      return;
    }
    if (part === '') throw new CliError(`"${key}": [] comes only after a name`);
    const existing = at[part];
    if (last) at[part] = value;
    else if (existing !== undefined && typeof existing === 'object' && existing !== null) at = existing as typeof at;
    else at = at[part] = next as Record<string, unknown> | unknown[];
  });
}

function fieldsOf(o: ApiOptions): Record<string, unknown> | undefined {
  const pairs = [
    ...(o.rawField ?? []).map((p) => ({ p, typed: false })),
    ...(o.field ?? []).map((p) => ({ p, typed: true })),
  ];
  if (pairs.length === 0) return undefined;
  const body: Record<string, unknown> = {};
  for (const { p, typed } of pairs) {
    const i = p.indexOf('=');
    if (i <= 0) throw new CliError(`"${p}" is not key=value`);
    const key = p.slice(0, i);
    place(body, key, typed ? typedValue(p.slice(i + 1), key) : p.slice(i + 1));
  }
  return body;
}

/** The path under /api/vc/v1, its {env}, {project} and {team} filled from --env or --project. */
async function pathOf(ctx: Ctx, given: string, o: ApiOptions): Promise<string> {
  let path = given.trim();
  if (/^https?:\/\//i.test(path)) {
    const url = new URL(path);
    if (url.origin !== ctx.client.origin)
      throw new CliError(`${url.origin} is not the console the client talks to (${ctx.client.origin}): give a path`);
    path = url.pathname + url.search;
  }
  if (!path.startsWith('/')) path = `/${path}`;
  if (path === API_PREFIX || path.startsWith(`${API_PREFIX}/`) || path.startsWith(`${API_PREFIX}?`))
    path = path.slice(API_PREFIX.length) || '/';
  const named = new Set([...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]));
  if (named.size === 0) return path;
  const unknown = [...named].filter((n) => !['env', 'project', 'team'].includes(n));
  if (unknown.length)
    throw new CliError(`The path names {${unknown[0]}}: only {env}, {project} and {team} are filled in`);
  const ids: Record<string, string> = {};
  if (o.env) {
    const env = await resolveEnvironment(ctx.client, o.env);
    Object.assign(ids, { env: env.id, project: env.project_id, team: env.team_id });
  } else if (o.project) {
    const project = await resolveProject(ctx.client, o.project);
    Object.assign(ids, { project: project.id, team: project.team_id });
  }
  for (const n of named) {
    if (!ids[n])
      throw new CliError(
        `The path names {${n}}: give ${n === 'env' ? '--env project/environment' : '--env project/environment or --project NAME'}`,
      );
  }
  return path.replace(/\{(\w+)\}/g, (_m, n: string) => ids[n]);
}

const isTask = (v: unknown): v is Task =>
  typeof v === 'object' &&
  v !== null &&
  ['id', 'kind', 'type', 'status'].every((k) => typeof (v as Record<string, unknown>)[k] === 'string');

/** Every page of a list (`next_before` passed back as `before`), as one `{data: [...]}`. */
async function allPages(ctx: Ctx, path: string): Promise<{ data: unknown[] }> {
  const data: unknown[] = [];
  let before: string | undefined;
  for (;;) {
    const url = new URL(path, 'http://x');
    if (before) url.searchParams.set('before', before);
    const page = (await ctx.client.request<Record<string, unknown>>('GET', url.pathname + url.search)).body;
    if (!Array.isArray(page?.data)) throw new CliError(`${path} does not answer a list: leave out --paginate`);
    data.push(...page.data);
    const next = page.next_before;
    if (typeof next !== 'string' || !next) return { data };
    before = next;
  }
}

export function register(program: Command): void {
  program
    .command('api')
    .description('Call any path of the API as yourself and print its JSON (what the console does, scripted)')
    .argument('<path>', 'e.g. /environments/{env}/domains (the /api/vc/v1 prefix is optional)')
    .option(
      '-X, --method <method>',
      `${METHODS.join(', ')} (default GET; POST when a field or --input is given, but for --paginate)`,
    )
    .option('-f, --raw-field <key=value>', 'a string field of the body (the query of a GET); repeat it', collect)
    .option(
      '-F, --field <key=value>',
      "a typed field: true, false, null and numbers as JSON, @FILE for a file's text; name[key] and name[] nest",
      collect,
    )
    .option('--input <file>', 'the request body as JSON, from a file ("-" for standard input)')
    .option('--env <env>', 'fills {env}, {project} and {team} in the path (id or project/environment)')
    .option('--project <project>', 'fills {project} and {team} in the path (id or name)')
    .option('--paginate', 'follow next_before and print every page as one {"data": [...]}')
    .option('--wait', 'when the answer is a task: its log live on stderr, then the ended task, and its exit code')
    .addHelpText(
      'after',
      `
Examples:
  service api /teams
  service api /environments/{env}/domains --env shop/production
  service api /environments/{env}/domains --env shop/production -f hostname=shop.example.com
  service api -X PATCH /environments/{env}/edge --env shop/production -F stickiness=true
  service api /environments/{env}/scale --env shop/production -F instances=2 --wait
  service api /tasks --paginate -f type=deploy
  service api -X DELETE /domains/ID`,
    )
    .action(async (given: string, o: ApiOptions, cmd: Command) => {
      const ctx = contextOf(cmd);
      const writes = !o.paginate && (Boolean(o.rawField?.length) || Boolean(o.field?.length) || o.input !== undefined);
      const method = (o.method ?? (writes ? 'POST' : 'GET')).toUpperCase();
      if (!(METHODS as readonly string[]).includes(method))
        throw new CliError(`-X ${o.method}: the API answers ${METHODS.join(', ')}`);
      const fields = fieldsOf(o);
      if (fields && o.input) throw new CliError('Give the body as fields or as --input, not both');
      let body: unknown = fields;
      if (o.input) {
        const text = readInput(o.input, 'the body from');
        try {
          body = JSON.parse(text);
        } catch (err) {
          throw new CliError(`${o.input} is not JSON: ${(err as Error).message}`);
        }
      }
      let path = await pathOf(ctx, given, o);
      if (method === 'GET' && body !== undefined) {
        // a read's fields are its query
        if (typeof body !== 'object' || body === null || Array.isArray(body))
          throw new CliError('A GET takes fields (its query), not a JSON body');
        const url = new URL(path, 'http://x');
        for (const [k, v] of Object.entries(body))
          url.searchParams.set(k, typeof v === 'string' ? v : JSON.stringify(v));
        path = url.pathname + url.search;
        body = undefined;
      }
      if (o.paginate) {
        if (method !== 'GET') throw new CliError('--paginate follows the pages of a GET');
        return printJson(await allPages(ctx, path));
      }
      const res = await ctx.client.request<unknown>(method, path, { body, stream: true });
      if (res.stream) return writeBytes(res.stream, res.headers.get('content-type') ?? '');
      if (o.wait) {
        if (!isTask(res.body)) throw new CliError(`${method} ${path} answered no task: leave out --wait`);
        const ended = await followTask(ctx.client, res.body.id, {
          write: (text) => process.stderr.write(text),
          label: `${res.body.type} (task ${res.body.id})`,
        });
        printJson(ended);
        reportOutcome(ended);
        process.exitCode = exitCodeOf(ended);
        return;
      }
      if (res.status === 204 || res.text === '') return note(`${res.status}: done, nothing to show`);
      if (typeof res.body === 'string') return void process.stdout.write(res.text);
      if (res.status === 202 && isTask(res.body))
        note(`Task ${res.body.id} started: \`service task ${res.body.id} --follow\` follows it`);
      out(JSON.stringify(res.body, null, 2));
    });
}

/** A binary answer (a snapshot's file) goes to stdout as its bytes, never to a terminal. */
async function writeBytes(bytes: Readable, type: string): Promise<void> {
  if (process.stdout.isTTY) {
    bytes.destroy();
    throw new CliError(`The answer is binary (${type}): send it to a file (\`service api PATH > FILE\`)`);
  }
  for await (const chunk of bytes) if (!process.stdout.write(chunk)) await once(process.stdout, 'drain');
}
