-- Wildcard rule for every kind of every *.example.org group, in the style of the Crossplane check.
health_status = { status = "Progressing", message = "Provisioning ..." }

local function contains(list, value)
  for _, v in ipairs(list) do
    if v == value then
      return true
    end
  end
  return false
end

if obj.status == nil or next(obj.status) == nil or obj.status.conditions == nil then
  return health_status
end
for _, condition in ipairs(obj.status.conditions) do
  if condition.type == "Synced" and condition.status == "False" then
    health_status.status = "Degraded"
    health_status.message = condition.message
    return health_status
  end
  if contains({ "Ready", "Healthy" }, condition.type) and condition.status == "True" then
    health_status.status = "Healthy"
    health_status.message = "Resource is up-to-date."
    return health_status
  end
end
return health_status
