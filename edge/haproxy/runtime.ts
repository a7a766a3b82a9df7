/**
 * Changes HAProxy makes without a reload, through its runtime API (the admin stats socket): a map or ACL file's
 * whole content replaced atomically (`prepare`, `add @<version>`, `commit`: requests see the old entries or
 * the new ones, never a half), and servers moved, made ready or put in maintenance (`set server`). The files
 * are written first (model.ts, server.ts), so what the runtime holds is what a reload or a restart reads.
 */
import { join } from 'node:path';
import { runtimeCommand } from '../runtime-command';
import { backendName, type EdgeModel, serverName, type Slot } from './model';
import { RUNTIME_PAYLOAD_MAX } from './buffer';

class RuntimeError extends Error {}

export async function command(socket: string, line: string, payload?: string): Promise<string> {
  return runtimeCommand(socket, line, { payload });
}

/** Replaces the entries of a map (`kind` map) or ACL file loaded by HAProxy, atomically. */
async function replaceEntries(socket: string, kind: 'map' | 'acl', file: string, content: string) {
  const prepared = await command(socket, `prepare ${kind} ${file}`);
  const version = /New version created: (\d+)/.exec(prepared)?.[1];
  if (!version) throw new RuntimeError(`prepare ${kind} ${file}: ${prepared.split('\n')[0]}`);
  const entries = content.trim();
  if (entries && kind === 'map') {
    // a command and its payload are read into one buffer (buffer.ts): RUNTIME_PAYLOAD_MAX characters to a command
    const batches: string[] = [];
    for (const line of entries.split('\n')) {
      const last = batches.length - 1;
      if (last >= 0 && batches[last].length + line.length < RUNTIME_PAYLOAD_MAX) batches[last] += `\n${line}`;
      else batches.push(line);
    }
    for (const batch of batches) {
      const added = await command(socket, `add map @${version} ${file}`, batch);
      if (added) throw new RuntimeError(`add map ${file}: ${added.split('\n')[0]}`);
    }
  } else if (entries) {
    // `add acl` takes no payload in 2.6: one command per pattern, many to a connection (`;`, escaped)
    const patterns = entries.split('\n');
    for (let i = 0; i < patterns.length; i += 200) {
      const line = patterns
        .slice(i, i + 200)
        .map((p) => `add acl @${version} ${file} ${p.replace(/[\\; ]/g, (c) => `\\${c}`)}`)
        .join('; ');
      const added = (await command(socket, line)).trim();
      if (added) throw new RuntimeError(`add acl ${file}: ${added.split('\n')[0]}`);
    }
  }
  const committed = await command(socket, `commit ${kind} @${version} ${file}`);
  if (committed) throw new RuntimeError(`commit ${kind} ${file}: ${committed.split('\n')[0]}`);
}

/** The files whose content differs between the two models (relative paths). */
export function changedFiles(before: EdgeModel | null, after: EdgeModel): string[] {
  return [...after.files].filter(([file, text]) => before?.files.get(file) !== text).map(([file]) => file);
}

/**
 * The map whose environments answer only their allowed addresses: before the lists change, it loses the
 * environments whose list goes away (so none answers 403 to everyone meanwhile); it gains the new ones after.
 */
const GATE = 'maps/allowlisted.map';

/** Applies the changed map and ACL files (in the model's order); `before`: what HAProxy held. */
export async function applyFiles(
  socket: string,
  dir: string,
  model: EdgeModel,
  files: string[],
  before: EdgeModel | null = null,
): Promise<void> {
  const gate = before?.files.get(GATE);
  const next = model.files.get(GATE);
  if (files.includes(GATE) && gate !== undefined && next !== undefined) {
    const kept = new Set(next.split('\n'));
    const both = gate.split('\n').filter((l) => l && kept.has(l));
    await replaceEntries(socket, 'map', join(dir, GATE), both.map((l) => `${l}\n`).join(''));
  }
  for (const file of files) {
    const kind = file.startsWith('maps/') ? 'map' : 'acl';
    await replaceEntries(socket, kind, join(dir, file), model.files.get(file) ?? '');
  }
}

/**
 * The `set server` commands that take the servers from `before` to `after` (every backend has the same slots):
 * the new server is given its address and made ready (up at once: the instance answered before it was
 * published; checks take it down if it stops) before the old one goes to maintenance. A port no environment
 * holds any more has its servers put in maintenance; a port taken anew gets its servers from its slots.
 */
export function serverCommands(before: EdgeModel, after: EdgeModel): string[] {
  const out: string[] = [];
  const ports = new Set([...before.envs.keys(), ...after.envs.keys()]);
  for (const port of [...ports].sort((a, b) => a - b)) {
    const be = backendName(port);
    const oldSlots = before.envs.get(port)?.slots ?? [];
    const newSlots = after.envs.get(port)?.slots ?? oldSlots.map((s) => ({ ...s, on: false }));
    newSlots.forEach((slot: Slot, i) => {
      const was = oldSlots[i];
      const serving = (s: Slot | undefined) => (s?.on ? s.active : null);
      const now = serving(slot);
      const then = serving(was);
      const addr = now ? slot[now] : null;
      const moved = now && (now !== then || JSON.stringify(addr) !== JSON.stringify(was?.[now]));
      if (now && addr && moved) {
        out.push(
          `set server ${be}/${serverName(i, now)} addr ${addr.host} port ${addr.port}`,
          `set server ${be}/${serverName(i, now)} state ready`,
          `set server ${be}/${serverName(i, now)} health up`,
        );
      }
      if (then && then !== now) out.push(`set server ${be}/${serverName(i, then)} state maint`);
    });
  }
  return out;
}

/** Runs the `set server` commands, 200 to a connection (`;`). */
export async function applyServers(socket: string, commands: string[]): Promise<void> {
  for (let i = 0; i < commands.length; i += 200) {
    const batch = commands.slice(i, i + 200);
    const answer = await command(socket, batch.join('; '));
    // `set server ... addr` answers what changed; the others answer nothing
    const bad = answer.split('\n').find((l) => l.trim() && !/changed|no need to change/i.test(l));
    if (bad) throw new RuntimeError(`set server (${batch[0].split(' ')[2]}, ...): ${bad}`);
  }
}

/**
 * Every server's address and state as `model` says, every port of `ports` (after an adoption: whatever the
 * runtime held); `slots`: the servers per backend.
 */
export function allServerCommands(model: EdgeModel, ports: { from: number; to: number }, slots: number): string[] {
  const out: string[] = [];
  for (let port = ports.from; port <= ports.to; port++) {
    const be = backendName(port);
    const env = model.envs.get(port);
    Array.from(
      { length: slots },
      (_, i): Slot => env?.slots[i] ?? { active: 'a', a: null, b: null, on: false },
    ).forEach((slot: Slot, i) => {
      for (const side of ['a', 'b'] as const) {
        const name = `${be}/${serverName(i, side)}`;
        const addr = slot[side];
        if (slot.on && slot.active === side && addr)
          out.push(`set server ${name} addr ${addr.host} port ${addr.port}`, `set server ${name} state ready`);
        else out.push(`set server ${name} state maint`);
      }
    });
  }
  return out;
}
