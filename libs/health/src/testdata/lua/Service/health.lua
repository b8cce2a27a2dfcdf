-- A core kind lives at <Kind>/health.lua and overrides the built-in Service check.
local hs = { status = "Healthy", message = "" }
if obj.spec.type == "LoadBalancer" and (obj.status == nil or obj.status.loadBalancer == nil or obj.status.loadBalancer.ingress == nil) then
  hs.status = "Degraded"
  hs.message = "this cluster has no load balancer controller"
end
return hs
