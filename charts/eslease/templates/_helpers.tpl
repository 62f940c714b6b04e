{{/*
Names. The release name is used as is when it already contains the chart name.
*/}}
{{- define "eslease.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "eslease.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "eslease.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels every object carries. */}}
{{- define "eslease.labels" -}}
helm.sh/chart: {{ include "eslease.chart" . }}
{{ include "eslease.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/component: controller
app.kubernetes.io/part-of: eslease
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Labels that select the controller's pods; never change them on upgrade. */}}
{{- define "eslease.selectorLabels" -}}
app.kubernetes.io/name: {{ include "eslease.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "eslease.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "eslease.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "eslease.image" -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository $tag -}}
{{- end -}}
{{- end -}}

{{- define "eslease.leaderElectionId" -}}
{{- default (include "eslease.fullname" .) .Values.leaderElection.id -}}
{{- end -}}

{{/* Where credentials and the CA bundle are mounted in the controller's container. */}}
{{- define "eslease.authDir" -}}/etc/eslease/elasticsearch-auth{{- end -}}
{{- define "eslease.caDir" -}}/etc/eslease/elasticsearch-ca{{- end -}}

{{/*
The rules the controller needs in the namespaces it watches, derived from the API calls it
makes: informers list and watch Leases, pods and nodes; the reconcile patches a Lease
(finalizer eslease.io/release, through metadata.finalizers) and its status subresource,
patches the holder pod's eslease.io/holds annotation, and records events (create, then
patch to count repeats). Nothing is read with a single GET and nothing is deleted.
*/}}
{{- define "eslease.namespacedRules" -}}
- apiGroups: ["eslease.io"]
  resources: ["leases"]
  verbs: ["list", "watch", "patch"]
- apiGroups: ["eslease.io"]
  resources: ["leases/status"]
  verbs: ["patch"]
- apiGroups: [""]
  resources: ["pods"]
  {{- if .Values.holdsAnnotation }}
  verbs: ["list", "watch", "patch"]
  {{- else }}
  verbs: ["list", "watch"]
  {{- end }}
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create", "patch"]
# The namespace's session: one coordination.k8s.io Lease named eslease-session that renews
# every grant in the namespace. Creating it cannot be limited to a name; the rest can.
- apiGroups: ["coordination.k8s.io"]
  resources: ["leases"]
  verbs: ["create"]
- apiGroups: ["coordination.k8s.io"]
  resources: ["leases"]
  resourceNames: ["eslease-session"]
  verbs: ["get", "list", "watch", "update", "delete"]
{{- end -}}

{{/*
The pod's affinity: .Values.affinity when set; otherwise, with podAntiAffinity soft (the
default) or hard, the replicas are spread over nodes (kubernetes.io/hostname).
*/}}
{{- define "eslease.affinity" -}}
{{- if .Values.affinity -}}
{{ toYaml .Values.affinity }}
{{- else if eq .Values.podAntiAffinity "soft" -}}
podAntiAffinity:
  preferredDuringSchedulingIgnoredDuringExecution:
    - weight: 100
      podAffinityTerm:
        topologyKey: kubernetes.io/hostname
        labelSelector:
          matchLabels:
            {{- include "eslease.selectorLabels" . | nindent 12 }}
{{- else if eq .Values.podAntiAffinity "hard" -}}
podAntiAffinity:
  requiredDuringSchedulingIgnoredDuringExecution:
    - topologyKey: kubernetes.io/hostname
      labelSelector:
        matchLabels:
          {{- include "eslease.selectorLabels" . | nindent 10 }}
{{- end -}}
{{- end -}}

{{/*
The label matchers that pick this release's controller out of Prometheus: the job and
namespace labels a ServiceMonitor (or an equivalent scrape configuration) gives the
metrics Service's targets.
*/}}
{{- define "eslease.promSelector" -}}
job="{{ include "eslease.fullname" . }}-metrics", namespace="{{ .Release.Namespace }}"
{{- end -}}
