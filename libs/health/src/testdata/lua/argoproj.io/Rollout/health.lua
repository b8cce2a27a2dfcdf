-- A Rollout-like check written for Lua 5.1 as Argo CD's scripts are: table.getn, unpack, numbers in messages.
local function getNumberValueOrDefault(field)
  if field ~= nil then
    return field
  end
  return 0
end

local function checkPaused(obj)
  if obj.status.pauseConditions ~= nil and table.getn(obj.status.pauseConditions) > 0 then
    local reasons = {}
    for i, condition in ipairs(obj.status.pauseConditions) do
      reasons[i] = condition.reason
    end
    return true, "Rollout is paused: " .. table.concat({ unpack(reasons) }, ", ")
  end
  return false, ""
end

hs = {}
if obj.status == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for rollout to finish: status has not been reconciled."
  return hs
end
if obj.metadata.generation ~= tonumber(obj.status.observedGeneration) then
  hs.status = "Progressing"
  hs.message = "Waiting for rollout spec update to be observed"
  return hs
end
for _, condition in ipairs(obj.status.conditions or {}) do
  if condition.type == "InvalidSpec" then
    hs.status = "Degraded"
    hs.message = condition.message
    return hs
  end
end
local paused, why = checkPaused(obj)
if paused then
  hs.status = "Suspended"
  hs.message = why
  return hs
end
local replicas = getNumberValueOrDefault(obj.spec.replicas)
local updated = getNumberValueOrDefault(obj.status.updatedReplicas)
local available = getNumberValueOrDefault(obj.status.availableReplicas)
if updated < replicas then
  hs.status = "Progressing"
  hs.message = "Waiting for roll out to finish: " .. updated .. " out of " .. replicas .. " new replicas have been updated..."
  return hs
end
if available < updated then
  hs.status = "Progressing"
  hs.message = string.format("Waiting for roll out to finish: %s of %d updated replicas are available...", available, updated)
  return hs
end
hs.status = "Healthy"
hs.message = ""
return hs
