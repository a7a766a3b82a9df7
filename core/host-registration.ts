/**
 * A host agent's place in the host registry (CONTRACT "Hosts"): the worker process registers its host when it
 * starts, heartbeats, and publishes its STORAGE_ROOTS, capacity, address and instance ports.
 *
 * The name is held by one agent at a time. An agent is known by a token kept in its DATA_DIR
 * (`DATA_DIR/host-instance`, 0600): the same agent restarted by its supervisor (same DATA_DIR) takes its row
 * again at once; another agent with that name is refused while the holder's heartbeat is younger than
 * HOST_LOST_SECONDS. An agent that finds its row taken by another (it was lost meanwhile) stops.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Knex } from 'knex';
import type { Config } from '../system/config';
import { claimHost, hostHeartbeat, markServicesHost } from '../db/queries/hosts';

/** The heartbeat's period: 5 s, or a third of HOST_LOST_SECONDS when that is shorter. */
const hostHeartbeatMs = (lostSeconds: number) => Math.min(5_000, Math.floor((lostSeconds * 1000) / 3));

/** This DATA_DIR's agent token, made once. */
function agentToken(dataDir: string): string {
  const file = join(dataDir, 'host-instance');
  try {
    const token = readFileSync(file, 'utf8').trim();
    if (token) return token;
  } catch {
    // not made yet
  }
  mkdirSync(dataDir, { recursive: true });
  const token = randomBytes(16).toString('hex');
  writeFileSync(file, `${token}\n`, { mode: 0o600 });
  return token;
}

export class HostNameInUse extends Error {
  constructor(
    readonly hostName: string,
    readonly heartbeatAgeSeconds: number,
    lostSeconds: number,
  ) {
    super(
      `Host name ${hostName} is in use by another running agent (its last heartbeat was ${heartbeatAgeSeconds.toFixed(1)} s ago). ` +
        `Give this agent another HOST_NAME, or stop the other one: its name is free once it has missed heartbeats ` +
        `for HOST_LOST_SECONDS (${lostSeconds} s).`,
    );
  }
}

interface RegisteredHost {
  name: string;
  stop(): void;
}

/**
 * Registers this process's host (throws HostNameInUse when another agent holds the name) and heartbeats until
 * stopped. `onLostName` is called when the row was taken by another agent after this one missed its heartbeats.
 */
export async function registerHost(
  knex: Knex,
  config: Pick<
    Config,
    'hostName' | 'hostAddress' | 'hostCapacity' | 'storageRoots' | 'instancePorts' | 'hostLostSeconds' | 'dataDir'
  >,
  o: {
    onLostName: () => void;
    onError: (err: unknown) => void;
    /** This host's machine runs the services server (npm start's own host): its work goes to this queue. */
    runsServices?: boolean;
    /** The id of the encryption key this process seals under (recorded on the host's row: `npm run keys`). */
    encryptionKeyId: string;
  },
): Promise<RegisteredHost> {
  const token = agentToken(config.dataDir);
  const claim = await claimHost(
    knex,
    {
      name: config.hostName,
      address: config.hostAddress,
      capacity: config.hostCapacity,
      storageRoots: config.storageRoots,
      instancePorts: config.instancePorts,
      token,
      encryptionKeyId: o.encryptionKeyId,
    },
    config.hostLostSeconds,
  );
  if (!claim.claimed) throw new HostNameInUse(config.hostName, claim.heartbeatAgeSeconds, config.hostLostSeconds);
  if (o.runsServices) await markServicesHost(knex, config.hostName);
  const timer = setInterval(() => {
    hostHeartbeat(knex, config.hostName, token).then(
      (ours) => {
        if (!ours) {
          clearInterval(timer);
          o.onLostName();
        }
      },
      o.onError, // the database may be away for a moment: the next beat tries again
    );
  }, hostHeartbeatMs(config.hostLostSeconds));
  timer.unref();
  return { name: config.hostName, stop: () => clearInterval(timer) };
}
