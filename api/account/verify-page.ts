import type { Context } from 'koa';
import { randomBytes } from 'node:crypto';
import type { User } from '../../db/models/user';
import { API_PREFIX } from '../lib/paths';
import { groupByFour, normalizeCode } from './codes';
import { escapeHtml as esc } from '../../system/html';

/** The page a person opens to approve a command-line sign-in (RFC 8628 verification_uri). */

type VerifyState =
  | { kind: 'signed-out'; userCode?: string }
  | { kind: 'enter-code'; user: User; userCode?: string; unknown: boolean }
  | { kind: 'confirm'; user: User; userCode: string };

const STYLE = `body{font:16px/1.5 system-ui,sans-serif;max-width:32rem;margin:3rem auto;padding:0 1rem;color:#1f2328}
h1{font-size:1.4rem}.code{font:600 1.8rem ui-monospace,monospace;letter-spacing:.2em;padding:.5rem 1rem;background:#f6f8fa;border:1px solid #d0d7de;border-radius:6px;display:inline-block}
button,input[type=submit]{font:inherit;padding:.5rem 1.2rem;border-radius:6px;border:1px solid #d0d7de;cursor:pointer;margin-right:.5rem}
.approve{background:#1f883d;color:#fff;border-color:#1f883d}.note{color:#59636e;font-size:.9rem}.error{color:#d1242f}
input[type=text]{font:1.2rem ui-monospace,monospace;padding:.4rem;text-transform:uppercase;width:11rem}`;

/** Approve and Deny post JSON with the X-CSRF-Token header taken from GET /session/token. */
function script(nonce: string, userCode: string): string {
  const api = JSON.stringify(API_PREFIX);
  const code = JSON.stringify(userCode).replace(/</g, '\\u003c');
  return `<script nonce="${nonce}">
(function () {
  var api = ${api}, userCode = ${code};
  var out = document.getElementById('result');
  function decide(action) {
    document.querySelectorAll('button').forEach(function (b) { b.disabled = true; });
    fetch(api + '/session/token', { credentials: 'same-origin' })
      .then(function (r) { if (!r.ok) throw new Error('Your session has ended; sign in again.'); return r.json(); })
      .then(function (t) {
        return fetch(api + '/cli/sessions/' + action, {
          method: 'POST', credentials: 'same-origin',
          headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': t.token },
          body: JSON.stringify({ user_code: userCode })
        });
      })
      .then(function (r) { return r.json().then(function (b) { return { ok: r.ok, body: b }; }); })
      .then(function (res) {
        if (!res.ok) throw new Error(res.body && res.body.error ? res.body.error.message : 'Something went wrong.');
        out.className = '';
        out.textContent = action === 'approve'
          ? 'Approved. Return to your terminal: the command line is now signed in.'
          : 'Denied. The command line will not be signed in.';
      })
      .catch(function (e) {
        out.className = 'error';
        out.textContent = e.message;
        document.querySelectorAll('button').forEach(function (b) { b.disabled = false; });
      });
  }
  document.getElementById('approve').addEventListener('click', function () { decide('approve'); });
  document.getElementById('deny').addEventListener('click', function () { decide('deny'); });
})();
</script>`;
}

function codeForm(userCode?: string): string {
  return `<form method="get" action="verify">
<p><label for="user_code">Code shown by the command line</label><br>
<input type="text" id="user_code" name="user_code" autocomplete="off" spellcheck="false" maxlength="9" placeholder="XXXX-XXXX" value="${esc(userCode ?? '')}">
<input type="submit" value="Continue"></p></form>`;
}

function renderVerifyPage(state: VerifyState, nonce: string): string {
  let body: string;
  let extra = '';
  switch (state.kind) {
    case 'signed-out':
      body = `<h1>Sign in to continue</h1>
<p>To let the command line sign in${state.userCode ? ` with the code <span class="code">${esc(state.userCode)}</span>` : ''}, first sign in to the console in this browser, then open this page again.</p>
<p class="note">This page never asks for your password.</p>`;
      break;
    case 'enter-code':
      body = `<h1>Sign in the command line</h1>
<p>Signed in as <strong>${esc(state.user.name)}</strong> (${esc(state.user.email)}).</p>
${state.unknown ? `<p class="error">The code ${esc(state.userCode)} is not waiting for approval: it may be mistyped, expired or already used.</p>` : ''}
${codeForm(state.unknown ? undefined : state.userCode)}`;
      break;
    case 'confirm':
      body = `<h1>Sign in the command line?</h1>
<p>Check that this code matches the one in your terminal:</p>
<p><span class="code">${esc(state.userCode)}</span></p>
<p>Approving signs the command line in as <strong>${esc(state.user.name)}</strong> (${esc(state.user.email)}); it can then do everything you can do in the console.</p>
<p class="note">Did not start a sign-in yourself? Choose Deny.</p>
<p><button id="approve" class="approve" type="button">Approve</button><button id="deny" type="button">Deny</button></p>
<p id="result" role="status"></p>`;
      extra = script(nonce, state.userCode);
      break;
  }
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Command-line sign-in</title>
<meta name="viewport" content="width=device-width, initial-scale=1"><meta name="referrer" content="no-referrer">
<style nonce="${nonce}">${STYLE}</style></head><body>
${body}
${extra}
</body></html>`;
}

/** Sends the page with headers that keep it out of frames, caches and other origins' scripts. */
export function sendVerifyPage(ctx: Context, state: VerifyState): void {
  const nonce = randomBytes(16).toString('base64');
  ctx.set(
    'Content-Security-Policy',
    `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'nonce-${nonce}'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'`,
  );
  ctx.set('X-Frame-Options', 'DENY');
  ctx.set('Cache-Control', 'no-store');
  ctx.set('Referrer-Policy', 'no-referrer');
  ctx.set('X-Content-Type-Options', 'nosniff');
  ctx.type = 'text/html; charset=utf-8';
  ctx.body = renderVerifyPage(state, nonce);
}

/** A user code from the query, shown as XXXX-XXXX when it has the right length. */
export function displayCode(raw: string | undefined): string | undefined {
  if (!raw) return undefined;
  const n = normalizeCode(raw);
  return n.length === 8 ? groupByFour(n) : raw.trim();
}
