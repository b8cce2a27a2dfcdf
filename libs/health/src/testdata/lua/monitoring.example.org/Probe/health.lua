-- Surface deletion progress while the resource is terminating, as Argo CD's current scripts do.
if obj.metadata ~= nil and obj.metadata.deletionTimestamp ~= nil then
  local deletionHs = {}
  deletionHs.status = "Progressing"
  deletionHs.message = "Pending deletion"
  if obj.metadata.finalizers ~= nil and #obj.metadata.finalizers > 0 then
    deletionHs.message = "Pending deletion; blocked by finalizers: " .. table.concat(obj.metadata.finalizers, ", ")
  end
  return deletionHs
end

local json = require("json")
local hs = {}
local last = obj.metadata.annotations and obj.metadata.annotations["example.org/last-result"]
if last == nil then
  hs.status = "Progressing"
  hs.message = "No probe result yet"
  return hs
end
local result = json.decode(last)
-- Timestamps parsed as strings and handed to os.time, as Argo CD's older CronJob script does.
local y, m, d, hh, mm, ss = string.match(result.at, "(%d+)-(%d+)-(%d+)T(%d+):(%d+):(%d+)Z")
local at = os.time({ year = y, month = m, day = d, hour = hh, min = mm, sec = ss })
local y2, m2, d2, hh2, mm2, ss2 = string.match(obj.status.lastSeen, "(%d+)-(%d+)-(%d+)T(%d+):(%d+):(%d+)Z")
local seen = os.time({ year = y2, month = m2, day = d2, hour = hh2, min = mm2, sec = ss2 })
if result.ok and at >= seen then
  hs.status = "Healthy"
  hs.message = string.format("%d of %d targets answered", result.up, result.total)
else
  hs.status = "Degraded"
  hs.message = tostring(result.total - result.up) .. " targets down, ratio " .. tostring(result.up / result.total)
end
return hs
