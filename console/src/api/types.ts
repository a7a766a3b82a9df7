import type { operations } from './schema';

type JsonOf<R> = R extends { content: { 'application/json': infer B } } ? B : never;
type Responses<K extends keyof operations> = operations[K]['responses'];

/** The JSON body of an operation's success answer (200, 201 or 202). */
export type Answer<K extends keyof operations> =
  | JsonOf<Responses<K> extends { 200: infer R } ? R : never>
  | JsonOf<Responses<K> extends { 201: infer R } ? R : never>
  | JsonOf<Responses<K> extends { 202: infer R } ? R : never>;

export type Task = Answer<'getTask'>;
/** A task as lists show it (GET /tasks leaves the phases out). */
export type TaskSummary = Answer<'listTasks'>['data'][number];
export type Environment = Answer<'getEnvironment'>;
export type Me = Answer<'getMe'>;
export type Team = Answer<'listTeams'>['data'][number];
export type Project = Answer<'listProjects'>['data'][number];
