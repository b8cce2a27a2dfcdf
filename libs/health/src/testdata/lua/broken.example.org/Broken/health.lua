-- Fails at run time: status.replicas is indexed on a missing table.
local hs = {}
hs.status = "Healthy"
hs.message = "replicas: " .. obj.status.details.replicas
return hs
