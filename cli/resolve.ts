import type { Client } from './client';
import { CliError } from './errors';

/** Names people type for projects and environments, turned into the API's ids. */

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

interface Project {
  id: string;
  team_id: string;
  name: string;
  repository: { url: string } | null;
  created_at: string;
}

export interface Environment {
  id: string;
  project_id: string;
  team_id: string;
  name: string;
  git_ref: string;
  auto_deploy: boolean;
  url: string;
  created_at: string;
}

const isId = (s: string) => UUID.test(s);

export async function listProjects(client: Client, teamId?: string): Promise<Project[]> {
  return (await client.get<{ data: Project[] }>('/projects', { team_id: teamId })).data;
}

/** Every environment the caller reaches (all pages), optionally of one project or team. */
export async function listEnvironments(
  client: Client,
  filter: { project_id?: string; team_id?: string } = {},
): Promise<Environment[]> {
  const all: Environment[] = [];
  let before: string | undefined;
  do {
    type Page = { data: Environment[]; next_before: string | null };
    const page = await client.get<Page>('/environments', { ...filter, limit: 100, before });
    all.push(...page.data);
    before = page.next_before ?? undefined;
  } while (before);
  return all;
}

/** A project by id or name (a name in several teams needs --team or the id). */
export async function resolveProject(client: Client, ref: string, teamId?: string): Promise<Project> {
  const projects = await listProjects(client, teamId);
  const found = projects.filter((p) => (isId(ref) ? p.id === ref.toLowerCase() : p.name === ref));
  if (found.length === 1) return found[0];
  if (found.length === 0) throw new CliError(`No project "${ref}" that you reach: \`service projects\` lists them`);
  throw new CliError(
    `Several projects are named "${ref}" (teams ${found.map((p) => p.team_id).join(', ')}): give --team or the project's id`,
  );
}

/** An environment by id, `project/environment`, or a bare name that only one environment has. */
export async function resolveEnvironment(client: Client, ref: string): Promise<Environment> {
  const trimmed = ref.trim();
  if (isId(trimmed)) return client.get<Environment>(`/environments/${trimmed.toLowerCase()}`);
  const slash = trimmed.indexOf('/');
  if (slash > 0) {
    const project = await resolveProject(client, trimmed.slice(0, slash));
    const name = trimmed.slice(slash + 1);
    const env = (await listEnvironments(client, { project_id: project.id })).find((e) => e.name === name);
    if (!env) {
      const hint = `\`service environments --project ${project.name}\` lists them`;
      throw new CliError(`Project ${project.name} has no environment "${name}": ${hint}`);
    }
    return env;
  }
  const matches = (await listEnvironments(client)).filter((e) => e.name === trimmed);
  if (matches.length === 1) return matches[0];
  if (matches.length === 0)
    throw new CliError(`No environment "${trimmed}" that you reach: \`service environments\` lists them`);
  const projects = new Map((await listProjects(client)).map((p) => [p.id, p.name]));
  const names = matches.map((e) => `${projects.get(e.project_id) ?? e.project_id}/${e.name}`);
  throw new CliError(
    `Several environments are named "${trimmed}": name one as project/environment (${names.join(', ')})`,
  );
}

/** `project/environment` labels for a list of environments. */
export async function environmentLabels(client: Client): Promise<Map<string, string>> {
  const [projects, envs] = await Promise.all([listProjects(client), listEnvironments(client)]);
  const names = new Map(projects.map((p) => [p.id, p.name]));
  return new Map(envs.map((e) => [e.id, `${names.get(e.project_id) ?? e.project_id}/${e.name}`]));
}
