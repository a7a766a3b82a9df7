import { readdirSync, readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { useTestContext } from '../../helpers/context';
import { createDeployWorld, getTask } from '../../helpers/deploy-fixtures';
import { sessionAgent } from '../../helpers/fixtures';
import { releaseDirFor } from '../../../host/provider/releases';

const t = useTestContext({ worker: true, edge: false });

describe('POST /projects/{id}/registries reaching builds', () => {
  it('gives build steps an .npmrc and a container auth file, and keeps the password out of the task log', async () => {
    const w = await createDeployWorld(t);
    const owner = await sessionAgent(t, w.owner);
    const password = 'npm_registry_pass_4c1f';
    expect(
      (await owner.post(`/projects/${w.project.id}/registries`, { host: 'npm.example.test', username: 'ci', password }))
        .status,
    ).toBe(201);
    w.repo.commit('v2', {
      buildSteps: [
        'cat "$NPM_CONFIG_USERCONFIG"',
        'cp "$REGISTRY_AUTH_FILE" auth-copy.json',
        'test -f "$DOCKER_CONFIG/config.json"',
      ],
    });

    const deploy = await w.api.post(`/environments/${w.environment.id}/deploy`);
    expect(deploy.status).toBe(202);
    let task = await getTask(t, w.api, deploy.body.id);
    for (let i = 0; i < 300 && !['succeeded', 'failed', 'cancelled'].includes(task.status); i++) {
      await new Promise((r) => setTimeout(r, 200));
      task = await getTask(t, w.api, deploy.body.id);
    }
    const log = (await w.api.get(`/tasks/${deploy.body.id}/log`)).text;
    expect(task.status, log).toBe('succeeded');

    const auth = Buffer.from(`ci:${password}`).toString('base64');
    const release = await t.deps
      .knex('releases')
      .where({ environment_id: w.environment.id })
      .orderBy('created_at', 'desc')
      .first('id');
    const copied = JSON.parse(
      readFileSync(join(releaseDirFor(t.dataDir, w.environment.id, release.id), 'auth-copy.json'), 'utf8'),
    );
    expect(copied).toEqual({ auths: { 'npm.example.test': { auth } } });
    expect(log).toContain('//npm.example.test/:_auth=[redacted]');
    expect(log).not.toContain(password);
    expect(log).not.toContain(auth);
    const authDir = join(t.dataDir, 'build-auth');
    expect(existsSync(authDir) ? readdirSync(authDir) : []).toEqual([]);
  });
});
