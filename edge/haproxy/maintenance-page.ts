/**
 * The maintenance pages without a reload (issue 28 item 5): each page is in `maps/pages.map` (base64, in
 * chunks of 8,000 characters, `<key>.<n>`: HAProxy 2.6 cuts a map file's line past ~16,380 characters into
 * two entries when it loads the file, and a runtime API payload must fit one buffer), and a Lua service of HAProxy answers the 503 from it: the project's page, or
 * the default one, with the environment's note (HTML-escaped, from `maintenance.map`) at each `{{note}}`.
 * Not a log-format (`lf-file`) answer: HAProxy 2.6 escapes the line feeds a sample gives there, and a file is
 * read only when HAProxy loads. Lua sends a page of any size, so a maintenance page no longer sizes the buffer.
 */

const MAINTENANCE_RETRY_SECONDS = 300;
const CHUNK = 8000; // a multiple of 4: each chunk is base64 of its own

/** The map entries of a page under `key` (`m<project>`, or `mdefault`). */
export function pageEntries(key: string, page: string): [string, string][] {
  const b64 = Buffer.from(page, 'utf8').toString('base64');
  const out: [string, string][] = [];
  for (let i = 0; i * CHUNK < b64.length; i++) out.push([`${key}.${i}`, b64.slice(i * CHUNK, (i + 1) * CHUNK)]);
  return out;
}

/** The Lua file, in the model's pages (relative to the data plane's dir). */
export const MAINTENANCE_LUA = 'pages/maintenance.lua';

export const pageKey = (projectId: string | null) => (projectId ? `m${projectId}` : 'mdefault');

/** The Lua service `vc_maintenance` (lua-load'ed), reading `mapPath` (maps/pages.map). */
export function maintenanceLua(mapPath: string): string {
  return `-- the edge's maintenance answer (edge/haproxy/maintenance-page.ts)
local pages = Map.new(${JSON.stringify(mapPath)}, Map._str)

local function page(applet, key)
  local parts = {}
  local i = 0
  while true do
    local chunk = pages:lookup(key .. "." .. i)
    if not chunk then break end
    parts[#parts + 1] = applet.c:b64dec(chunk) or ""
    i = i + 1
  end
  if #parts == 0 then return nil end
  return table.concat(parts)
end

core.register_service("vc_maintenance", "http", function(applet)
  local project = applet:get_var("txn.p") or ""
  local html = page(applet, "m" .. project) or page(applet, "mdefault") or ""
  -- txn.maint: "n" and the note, HTML-escaped, in base64
  local maint = applet:get_var("txn.maint") or "n"
  local note = ""
  if #maint > 1 then note = applet.c:b64dec(string.sub(maint, 2)) or "" end
  html = string.gsub(html, "{{note}}", function() return note end)
  applet:set_status(503)
  applet:add_header("content-type", "text/html; charset=utf-8")
  applet:add_header("cache-control", "no-store")
  applet:add_header("retry-after", "${MAINTENANCE_RETRY_SECONDS}")
  applet:add_header("content-length", tostring(#html))
  applet:start_response()
  if applet.method ~= "HEAD" then applet:send(html) end
end)
`;
}
