-- In the form of Argo CD's bundled cert-manager check (resource_customizations/cert-manager.io/Certificate):
-- a certificate being issued is Progressing, then its Ready condition decides.
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
    if condition.type == "Ready" and condition.status == "False" then
      hs.status = "Degraded"
      hs.message = condition.message
      return hs
    end
    if condition.type == "Ready" and condition.status == "True" then
      hs.status = "Healthy"
      hs.message = condition.message
      return hs
    end
  end
end
hs.status = "Progressing"
hs.message = "Waiting for certificate"
return hs
