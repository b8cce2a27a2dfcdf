-- An exact rule: it wins over the _.example.org/_ wildcard for this kind.
local hs = {}
if obj.status ~= nil and obj.status.phase == "Available" then
  hs.status = "Healthy"
  hs.message = "Database " .. obj.metadata.name .. " is available on port " .. obj.status.port
  return hs
end
hs.status = "Progressing"
hs.message = "Database is " .. ((obj.status or {}).phase or "pending")
return hs
