-- wrk -s wrk_post.lua URL -- BODYFILE CONTENT_TYPE [close]
-- POSTs BODYFILE as CONTENT_TYPE on every request. With "close", each request carries
-- `Connection: close` (a new connection per call: what the sniffer costs per connection).
-- No response() callback: defining one hands every reply to Lua and slows wrk down;
-- correctness is checked separately with wrk_check.lua.
function init(args)
  local f = assert(io.open(args[1], "rb"))
  wrk.body = f:read("*a"); f:close()
  wrk.method = "POST"
  wrk.headers["Content-Type"] = args[2] or "text/xml"
  if args[3] == "close" then wrk.headers["Connection"] = "close" end
end
