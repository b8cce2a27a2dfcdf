-- In the style of Argo CD's bundled cert-manager check: Issuing wins, then Ready decides.
local hs = {}
if obj.status ~= nil and obj.status.conditions ~= nil then
  for _, condition in ipairs(obj.status.conditions) do
    if condition.type == "Issuing" and condition.status == "True" then
      hs.status = "Progressing"
      hs.message = condition.message
      return hs
    end
  end
  for _, condition in ipairs(obj.status.conditions) do
    if condition.type == "Ready" then
      if condition.status == "True" then
        hs.status = "Healthy"
      else
        hs.status = "Degraded"
      end
      hs.message = condition.message
      return hs
    end
  end
end
hs.status = "Progressing"
hs.message = "Waiting for certificate"
return hs
