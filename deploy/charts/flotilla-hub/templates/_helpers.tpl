{{- define "flotilla-hub.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "flotilla-hub.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "flotilla-hub.labels" -}}
{{ include "flotilla-hub.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "flotilla-hub.secretName" -}}
{{- .Values.auth.existingSecret | default (include "flotilla-hub.fullname" .) -}}
{{- end -}}

{{/*
The hub refuses to start without an admin credential and a secrets key (outside dev mode); say so at
install time, naming the values, instead of leaving a pod in CrashLoopBackOff.
*/}}
{{- define "flotilla-hub.validate" -}}
{{- if not .Values.auth.existingSecret -}}
{{- if not .Values.devMode -}}
{{- if not (or .Values.auth.adminToken .Values.auth.oidc.issuer) -}}
{{- fail "flotilla-hub: set auth.adminToken or auth.oidc.issuer (or auth.existingSecret); without one the hub refuses to start (devMode=true for a development hub)" -}}
{{- end -}}
{{- if not .Values.auth.secretsKey -}}
{{- fail "flotilla-hub: set auth.secretsKey (64 hex digits: openssl rand -hex 32) or auth.existingSecret; without it the hub refuses to start (devMode=true for a development hub)" -}}
{{- end -}}
{{- end -}}
{{- if not .Values.database.url -}}
{{- fail "flotilla-hub: set database.url (postgresql://...) or auth.existingSecret with a DATABASE_URL key" -}}
{{- end -}}
{{- if not .Values.redis.url -}}
{{- fail "flotilla-hub: set redis.url (redis://...) or auth.existingSecret with a REDIS_URL key" -}}
{{- end -}}
{{- end -}}
{{- if and .Values.auth.oidc.issuer (not .Values.auth.oidc.audience) -}}
{{- fail "flotilla-hub: auth.oidc.audience is required with auth.oidc.issuer" -}}
{{- end -}}
{{- if and .Values.ingress.enabled (not .Values.ingress.host) -}}
{{- fail "flotilla-hub: ingress.host is required with ingress.enabled" -}}
{{- end -}}
{{- end -}}
