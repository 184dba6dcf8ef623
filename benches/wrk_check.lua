-- wrk -s wrk_check.lua URL -- BODYFILE CONTENT_TYPE
-- (from shared/reference/wrk_check.lua) POSTs BODYFILE and checks every reply body:
-- counts replies that carry an XML-RPC <fault> or a JSON-RPC "error" member (both
-- arrive as HTTP 200, which wrk would count as success), or a status other than 200.
local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args)
  local f = assert(io.open(args[1], "rb"))
  wrk.body = f:read("*a"); f:close()
  wrk.method = "POST"
  wrk.headers["Content-Type"] = args[2] or "text/xml"
  faults, oks = 0, 0
end
function response(status, headers, body)
  if status ~= 200 or body:find("<fault>", 1, true) or body:find('"error"', 1, true) then
    faults = faults + 1
  else
    oks = oks + 1
  end
end
function done(summary, latency, requests)
  local f, o = 0, 0
  for _, t in ipairs(threads) do f = f + t:get("faults"); o = o + t:get("oks") end
  io.write(string.format("checked replies: ok=%d fault_or_error=%d\n", o, f))
end
