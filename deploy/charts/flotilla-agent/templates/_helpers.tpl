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

{{/* The verbs the agent uses, and no other (see values.yaml, rbac); only reads when it writes as the projects' ServiceAccounts. */}}
{{- define "flotilla-agent.verbs" -}}
{{- if .Values.impersonation.projects -}}
['get', 'list', 'watch']
{{- else -}}
['get', 'list', 'watch', 'create', 'patch', 'delete']
{{- end -}}
{{- end -}}

{{/* The rules of the agent's ClusterRole, or of each namespace's Role (see values.yaml, rbac). */}}
{{- define "flotilla-agent.rules" -}}
{{- range .Values.rbac.rules }}
- apiGroups: {{ toJson .apiGroups }}
  resources: {{ toJson .resources }}
  verbs: {{ include "flotilla-agent.verbs" $ }}
{{- end }}
# The Events it leaves on what it syncs, heals, prunes or fails, whatever `rules` were narrowed to.
- apiGroups: ['']
  resources: ['events']
  verbs: ['create']
{{- end -}}
