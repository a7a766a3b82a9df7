import type { Command } from 'commander';
import { Client, sleep } from '../client';
import { readStore, resolveTarget, writeStore } from '../config';
import { contextOf, type GlobalOptions } from '../context';
import { ApiError, CliError } from '../errors';
import { bold, details, note, out, printJson } from '../output';

/** Signing in through the browser (RFC 8628), out, and who the client acts as. */

interface DeviceAuthorization {
  device_code: string;
  user_code: string;
  verification_uri: string;
  verification_uri_complete: string;
  interval: number;
  expires_in: number;
}

interface DeviceToken {
  access_token: string;
  user: { id: string; email: string; name: string };
}

const SLOW_DOWN_SECONDS = 5; // RFC 8628 section 3.5

/** Opens the page when a person sits at a graphical session; a headless host just shows the URL. */
async function openBrowser(url: string): Promise<void> {
  const graphical = process.platform !== 'linux' || Boolean(process.env.DISPLAY || process.env.WAYLAND_DISPLAY);
  if (!process.stdout.isTTY || !graphical) return;
  try {
    const { default: open } = await import('open');
    const child = await open(url);
    child.on('error', () => undefined);
  } catch {
    // No browser to open: the URL is printed above.
  }
}

async function login(cmd: Command, opts: { browser: boolean }): Promise<void> {
  const { api } = cmd.optsWithGlobals<GlobalOptions>();
  const origin = resolveTarget(api, { ...process.env, VC_TOKEN: '' }).origin;
  const client = new Client(origin, undefined, note);
  const device = await client.post<DeviceAuthorization>('/cli/sessions');
  out(`To sign in, open this page in a browser where you are signed in to the console:`);
  out(`  ${device.verification_uri_complete}`);
  out(`and check that it shows the code ${bold(device.user_code)}`);
  out(`(or open ${device.verification_uri} and enter the code).`);
  if (opts.browser) await openBrowser(device.verification_uri_complete);
  note('Waiting for the approval in the browser...');
  let interval = device.interval;
  const deadline = Date.now() + device.expires_in * 1000;
  for (;;) {
    await sleep(interval * 1000);
    try {
      const token = await client.post<DeviceToken>('/cli/sessions/token', { device_code: device.device_code });
      const store = readStore();
      store.sessions[origin] = {
        token: token.access_token,
        user: { id: token.user.id, email: token.user.email, name: token.user.name },
        signed_in_at: new Date().toISOString(),
      };
      store.default_api = origin;
      writeStore(store);
      out(`Signed in to ${origin} as ${token.user.name} <${token.user.email}>.`);
      return;
    } catch (err) {
      if (!(err instanceof ApiError) || err.status !== 400) throw err;
      if (err.code === 'authorization_pending') continue;
      if (err.code === 'slow_down') {
        interval += SLOW_DOWN_SECONDS;
        continue;
      }
      if (err.code === 'access_denied') {
        throw new CliError('The sign-in was denied in the browser; run `service login` to try again');
      }
      if (err.code === 'expired_token' || Date.now() > deadline) {
        throw new CliError('The code expired before it was approved; run `service login` again');
      }
      throw err;
    }
  }
}

async function logout(cmd: Command): Promise<void> {
  const { api } = cmd.optsWithGlobals<GlobalOptions>();
  const store = readStore();
  const origin = resolveTarget(api, { ...process.env, VC_TOKEN: '' }).origin;
  const session = store.sessions[origin];
  if (!session) {
    note(`Not signed in to ${origin}; nothing to do.`);
    return;
  }
  try {
    // The stored sign-in, whatever VC_TOKEN says: it is the session that ends.
    await new Client(origin, undefined, note).request('DELETE', '/session', { bearer: session.token });
  } catch (err) {
    // 401: the session had already ended (expired, or ended from the console); forgetting it is all that is left.
    if (!(err instanceof ApiError && err.status === 401)) throw err;
  }
  delete store.sessions[origin];
  if (store.default_api === origin) delete store.default_api;
  writeStore(store);
  out(`Signed out of ${origin}.`);
}

interface Me {
  id: string;
  email: string;
  name: string;
  via: 'session' | 'cli' | 'token';
  token?: { id: string; team_id: string; purpose: string; expires_at: string };
}

async function whoami(cmd: Command): Promise<void> {
  const ctx = contextOf(cmd);
  const me = await ctx.client.get<Me>('/me');
  if (ctx.json) return printJson(me);
  details([
    ['Console', ctx.target.origin],
    ['Name', me.name],
    ['E-mail', me.email],
    [
      'Signed in',
      me.token ? `with a personal access token (VC_TOKEN): ${me.token.purpose}` : 'through the browser (service login)',
    ],
    ...(me.token
      ? ([
          ['Team', me.token.team_id],
          ['Expires', me.token.expires_at],
        ] as [string, string][])
      : []),
  ]);
}

export function register(program: Command): void {
  program
    .command('login')
    .description('Sign in through the browser (OAuth device flow) and keep the sign-in for this console')
    .option('--no-browser', 'only print the URL, do not open a browser')
    .action((opts, cmd: Command) => login(cmd, opts));
  program
    .command('logout')
    .description("End this console's command-line sign-in on the server and forget it here")
    .action((_opts, cmd: Command) => logout(cmd));
  program
    .command('whoami')
    .description('Who the client acts as, and how (a stored sign-in or VC_TOKEN)')
    .action((_opts, cmd: Command) => whoami(cmd));
}
