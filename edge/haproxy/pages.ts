/**
 * The edge's own pages without a reload (issue 28 item 5): the maintenance pages and the projects' error pages
 * are in `maps/pages.map` (base64, in chunks of 8,000 characters, `<key>.<n>`: HAProxy 2.6 cuts a map file's
 * line past ~16,380 characters into two entries when it loads the file, and a runtime API payload must fit one
 * buffer), and Lua (this file's PAGES_LUA, loaded in each thread) answers from it:
 * - `vc_maintenance` (a service): the project's maintenance page, or the default one, with the environment's
 *   note (HTML-escaped, from `maintenance.map`) at each `{{note}}`;
 * - `vc_unavailable` (a service): no release is live, for a project with an error page: that page, 503;
 * - `vc_error_page` (an `http-response` action) and `vc_error_page_stream` (a filter): HAProxy's own 502,
 *   503 and 504 (`http-error`, marked `x-vc-edge-error`) replaced with the project's error page, on the
 *   loopback hop an environment of such a project takes (hops.ts). The action answers with one reply, which
 *   must fit one buffer (REPLY_MAX_BYTES); a larger page is streamed by the filter, which costs every
 *   request that passes it a few Lua calls, so only the projects whose page is larger take it.
 * Not a log-format (`lf-file`, `lf-string`) answer: HAProxy 2.6 escapes the control characters a sample gives
 * there (a line feed becomes `%0A`), and a file is read only when HAProxy loads. Lua sends a page of any size,
 * so no page sizes HAProxy's buffer.
 */

import { BUFSIZE } from './buffer';

const MAINTENANCE_RETRY_SECONDS = 300;
const CHUNK = 8000; // a multiple of 4: each chunk is base64 of its own

/**
 * The largest error page the action answers with in one reply: HAProxy 2.6 builds it in one buffer (buffer.ts;
 * at 32 KiB a 32,400-byte page fitted with its headers and HSTS, 32,500 got a 500), with room left for the headers
 * `http-after-response` adds.
 */
export const REPLY_MAX_BYTES = BUFSIZE - 4096;

/** The map entries of a page under `key` (`m<project>`, `mdefault`, `e<project>`). */
export function pageEntries(key: string, page: string): [string, string][] {
  const b64 = Buffer.from(page, 'utf8').toString('base64');
  const out: [string, string][] = [];
  for (let i = 0; i * CHUNK < b64.length; i++) out.push([`${key}.${i}`, b64.slice(i * CHUNK, (i + 1) * CHUNK)]);
  return out;
}

/** The Lua file, in the model's pages (relative to the data plane's dir). */
export const PAGES_LUA = 'pages/pages.lua';

/** A project's maintenance page (null: the default one). */
export const pageKey = (projectId: string | null) => (projectId ? `m${projectId}` : 'mdefault');
/** A project's error page. */
export const errorPageKey = (projectId: string) => `e${projectId}`;

/**
 * How an environment of a project with an error page is served (the value of `error-page.map`): `r`, the page
 * fits one reply (the action); `s`, it is streamed (the filter).
 */
export const errorPageMode = (bytes: number) => (bytes <= REPLY_MAX_BYTES ? 'r' : 's');

/** The Lua (loaded per thread) reading `maps.pages` (pages.map) and `maps.projects` (env-project.map). */
export function pagesLua(maps: { pages: string; projects: string }): string {
  return `-- the edge's own pages (edge/haproxy/pages.ts)
local pages = Map.new(${JSON.stringify(maps.pages)}, Map._str)
local projects = Map.new(${JSON.stringify(maps.projects)}, Map._str)

local function page(c, key)
  local parts = {}
  local i = 0
  while true do
    local chunk = pages:lookup(key .. "." .. i)
    if not chunk then break end
    parts[#parts + 1] = c:b64dec(chunk) or ""
    i = i + 1
  end
  if #parts == 0 then return nil end
  return table.concat(parts)
end

local function answer(applet, status, type, body, retry)
  applet:set_status(status)
  applet:add_header("content-type", type)
  applet:add_header("cache-control", "no-store")
  if retry then applet:add_header("retry-after", retry) end
  applet:add_header("content-length", tostring(#body))
  applet:start_response()
  if applet.method ~= "HEAD" then applet:send(body) end
end

core.register_service("vc_maintenance", "http", function(applet)
  local project = applet:get_var("txn.p") or ""
  local html = page(applet.c, "m" .. project) or page(applet.c, "mdefault") or ""
  -- txn.maint: "n" and the note, HTML-escaped, in base64
  local maint = applet:get_var("txn.maint") or "n"
  local note = ""
  if #maint > 1 then note = applet.c:b64dec(string.sub(maint, 2)) or "" end
  html = string.gsub(html, "{{note}}", function() return note end)
  answer(applet, 503, "text/html; charset=utf-8", html, "${MAINTENANCE_RETRY_SECONDS}")
end)

-- no release is live (txn.unavail: why, in base64), for a project with an error page
core.register_service("vc_unavailable", "http", function(applet)
  local project = projects:lookup(applet:get_var("txn.env") or "") or ""
  local html = page(applet.c, "e" .. project)
  if html then return answer(applet, 503, "text/html; charset=utf-8", html) end
  -- the page went away meanwhile: why, as the edge says it without one
  local why = applet.c:b64dec(applet:get_var("txn.unavail") or "") or ""
  answer(applet, 503, "text/plain; charset=utf-8", why)
end)

-- HAProxy's own 502/503/504 (marked), on a hop: the project's page in one reply, keeping the status
core.register_action("vc_error_page", { "http-res" }, function(txn)
  local html = page(txn.c, "e" .. (txn:get_var("txn.p") or ""))
  -- none (cleared meanwhile), or one a reply cannot hold (changed meanwhile): HAProxy's own answer stays
  if not html or #html > ${REPLY_MAX_BYTES} then return end
  local reply = txn:reply()
  reply:set_status(txn.sf:status())
  reply:add_header("content-type", "text/html; charset=utf-8")
  reply:add_header("cache-control", "no-store")
  reply:set_body(html)
  txn:done(reply)
end)

-- the same for a page larger than one reply: the answer's body replaced, as the client takes it
local Stream = {}
Stream.id = "vc error page"
Stream.flags = filter.FLT_CFG_FL_HTX
Stream.__index = Stream

function Stream:new()
  return setmetatable({}, Stream)
end

-- txn.edge_error: set by the backend's http-response rule when the answer is HAProxy's own (marked)
function Stream:http_headers(txn, msg)
  if not msg:is_resp() or not txn:get_var("txn.edge_error") then return end
  local html = page(txn.c, "e" .. (txn:get_var("txn.p") or ""))
  if not html then return end
  msg:set_header("content-type", "text/html; charset=utf-8")
  msg:set_header("content-length", tostring(#html))
  if txn.f:method() == "HEAD" then return end
  self.html = html
  self.sent = 0
  self.wait = 1
  filter.register_data_filter(self, msg.channel)
end

function Stream:http_payload(txn, msg)
  -- HAProxy's own text goes; the page's end is the message's end
  msg:remove()
  if self.sent < #self.html then msg:unset_eom() end
  local moved = false
  while self.sent < #self.html do
    local n = msg:send(string.sub(self.html, self.sent + 1, self.sent + 8192))
    if n <= 0 then
      -- the buffer is full: called again once the client took some (sooner while it takes it at once)
      if moved then self.wait = 1 else self.wait = math.min(self.wait * 2, 100) end
      filter.wake_time(self.wait)
      return filter.WAIT
    end
    self.sent = self.sent + n
    moved = true
  end
  msg:set_eom()
end

core.register_filter("vc_error_page_stream", Stream, function(flt) return flt end)
`;
}
