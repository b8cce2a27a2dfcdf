{{- define "flotilla-agent.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "flotilla-agent.labels" -}}
{{ include "flotilla-agent.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "flotilla-agent.bootstrapSecret" -}}
{{- .Values.bootstrap.existingSecret | default "flotilla-bootstrap" -}}
{{- end -}}

{{/* The verbs the agent uses, and no other (see values.yaml, rbac). */}}
{{- define "flotilla-agent.verbs" -}}
['get', 'list', 'watch', 'create', 'patch', 'delete']
{{- end -}}
