{{/* _helpers.tpl: names, labels, images and shared pod settings of the tarema chart. */}}

{{- define "tarema.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Resource name prefix: the release name, or <release>-tarema when it lacks "tarema". */}}
{{- define "tarema.fullname" -}}
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

{{/* Labels every object carries. */}}
{{- define "tarema.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "tarema.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: tarema
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Selector labels of one component: include "tarema.selector" (list . "scheduler"). */}}
{{- define "tarema.selector" -}}
{{- $ := index . 0 -}}
app.kubernetes.io/name: {{ include "tarema.name" $ }}
app.kubernetes.io/instance: {{ $.Release.Name }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end -}}

{{/* Labels of one component's objects. */}}
{{- define "tarema.componentLabels" -}}
{{ include "tarema.labels" (index . 0) }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end -}}

{{/* Image of one component: include "tarema.image" (list . .Values.scheduler.image). */}}
{{- define "tarema.image" -}}
{{- $ := index . 0 -}}
{{- $img := index . 1 -}}
{{- $tag := $img.tag | default $.Values.image.tag | default $.Chart.AppVersion -}}
{{- if $.Values.image.registry -}}
{{- printf "%s/%s:%s" $.Values.image.registry $img.repository $tag -}}
{{- else -}}
{{- printf "%s:%s" $img.repository $tag -}}
{{- end -}}
{{- end -}}

{{/* ServiceAccount names, one per component (the bench Jobs have their own). */}}
{{- define "tarema.sa.scheduler" -}}{{ include "tarema.fullname" . }}-scheduler{{- end -}}
{{- define "tarema.sa.labeler" -}}{{ include "tarema.fullname" . }}-labeler{{- end -}}
{{- define "tarema.sa.profiler" -}}{{ include "tarema.fullname" . }}-profiler{{- end -}}
{{- define "tarema.sa.bench" -}}{{ include "tarema.fullname" . }}-profiler-bench{{- end -}}

{{/* The Secret and key holding the labeler's DATABASE_URL. */}}
{{- define "tarema.db.secretName" -}}
{{- if .Values.postgresql.bundled -}}
{{ include "tarema.fullname" . }}-postgresql
{{- else if .Values.postgresql.external.existingSecret -}}
{{ .Values.postgresql.external.existingSecret }}
{{- else -}}
{{ include "tarema.fullname" . }}-database
{{- end -}}
{{- end -}}
{{- define "tarema.db.secretKey" -}}
{{- if or .Values.postgresql.bundled (not .Values.postgresql.external.existingSecret) -}}
uri
{{- else -}}
{{ .Values.postgresql.external.existingSecretKey }}
{{- end -}}
{{- end -}}

{{/* Pod settings shared by the tarema pods: pull secrets and pod securityContext. */}}
{{- define "tarema.podCommon" -}}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
{{- end -}}

{{/* Scheduling constraints of a component: include "tarema.placement" .Values.scheduler */}}
{{- define "tarema.placement" -}}
{{- with .nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* The scheduler's config file: values.scheduler.config plus the chart-managed keys. */}}
{{- define "tarema.scheduler.config" -}}
{{- $c := deepCopy .Values.scheduler.config -}}
{{- $_ := set $c "mode" .Values.scheduler.mode -}}
{{- $_ := set $c "bindAddress" "0.0.0.0" -}}
{{- $_ := set $c "port" (int .Values.scheduler.port) -}}
{{- $le := .Values.scheduler.leaderElection -}}
{{- if eq .Values.scheduler.mode "extender" -}}
{{- $_ := set $c "extender" (dict "bind" .Values.extender.bind) -}}
{{- /* the pods the extender serves are those of kube-scheduler's profile: its Reservations and
   backfill's shadows are theirs */ -}}
{{- $_ := set $c "schedulerName" .Values.extender.profileSchedulerName -}}
{{- end -}}
{{- $_ := set $c "leaderElection" (dict "enabled" $le.enabled "namespace" .Release.Namespace "name" $le.leaseName "leaseMs" (int $le.leaseMs) "renewDeadlineMs" (int $le.renewDeadlineMs) "retryMs" (int $le.retryMs)) -}}
{{- toYaml $c -}}
{{- end -}}

{{/* TLS: "true" when cert-manager issues the certificates (provider cert-manager, or auto with
   the cert-manager.io/v1 API present). */}}
{{- define "tarema.tls.certManager" -}}
{{- $p := .Values.tls.provider -}}
{{- if or (eq $p "cert-manager") (and (eq $p "auto") (.Capabilities.APIVersions.Has "cert-manager.io/v1")) -}}
true
{{- end -}}
{{- end -}}

{{/* The Secret holding the shared auth token (key "token"). */}}
{{- define "tarema.auth.secretName" -}}
{{- .Values.auth.existingSecret | default (printf "%s-auth" (include "tarema.fullname" .)) -}}
{{- end -}}

{{/* DNS names of the server certificate: the Services in every short and long form. */}}
{{- define "tarema.tls.dnsNames" -}}
{{- $full := include "tarema.fullname" . -}}
{{- $ns := .Release.Namespace -}}
{{- $names := list -}}
{{- range $c := list "scheduler" "labeler" "webhook" "dam" -}}
{{- $svc := printf "%s-%s" $full $c -}}
{{- $names = concat $names (list $svc (printf "%s.%s" $svc $ns) (printf "%s.%s.svc" $svc $ns) (printf "%s.%s.svc.cluster.local" $svc $ns)) -}}
{{- end -}}
{{- concat $names .Values.tls.extraDnsNames | toJson -}}
{{- end -}}

{{/* Volumes and flags for TLS and the auth token, shared by the scheduler and the labeler:
   include "tarema.security.args" . / "tarema.security.mounts" . / "tarema.security.volumes" . */}}
{{- define "tarema.security.args" -}}
{{- if .Values.tls.enabled }}
- --tls-cert-file=/etc/tarema/tls/tls.crt
- --tls-key-file=/etc/tarema/tls/tls.key
- --client-ca-file=/etc/tarema/tls/ca.crt
{{- end }}
- --auth-token-file=/etc/tarema/auth/token
{{- end -}}
{{- define "tarema.security.mounts" -}}
{{- if .Values.tls.enabled }}
- {name: tls, mountPath: /etc/tarema/tls, readOnly: true}
{{- end }}
- {name: auth, mountPath: /etc/tarema/auth, readOnly: true}
{{- end -}}
{{- define "tarema.security.volumes" -}}
{{- if .Values.tls.enabled }}
- name: tls
  secret: {secretName: {{ include "tarema.fullname" . }}-tls}
{{- end }}
- name: auth
  secret:
    secretName: {{ include "tarema.auth.secretName" . }}
    items: [{key: token, path: token}]
{{- end -}}

{{/* The bundled PostgreSQL serves TLS (and its clients verify it) when it is bundled and
   tls.enabled: "true" or "". */}}
{{- define "tarema.pg.tls" -}}
{{- if and .Values.postgresql.bundled .Values.tls.enabled -}}
true
{{- end -}}
{{- end -}}

{{/* The Secret with the bundled PostgreSQL's certificate (tls.crt, tls.key, ca.crt). */}}
{{- define "tarema.pg.tlsSecret" -}}{{ include "tarema.fullname" . }}-postgresql-tls{{- end -}}

{{/* DNS names of the bundled PostgreSQL's server certificate: its Service in every form. */}}
{{- define "tarema.pg.dnsNames" -}}
{{- $svc := printf "%s-postgresql" (include "tarema.fullname" .) -}}
{{- $ns := .Release.Namespace -}}
{{- list $svc (printf "%s.%s" $svc $ns) (printf "%s.%s.svc" $svc $ns) (printf "%s.%s.svc.cluster.local" $svc $ns) | toJson -}}
{{- end -}}

{{/* The CA a database client verifies the server with, as a dict {secret, key} (empty
   when there is none): for the bundled PostgreSQL with TLS, ca.crt of its certificate's
   Secret (never the key; its URI says sslmode=verify-full); for an external database,
   postgresql.external.caSecret's key caSecretKey. Without either: nothing, the URI as it is.
   The planner's own planner.database.caSecret wins over the external one (tarema.db.plannerCa).
   Returned as JSON: include "tarema.db.ca" . | fromJson */}}
{{- define "tarema.db.ca" -}}
{{- $ext := .Values.postgresql.external -}}
{{- if include "tarema.pg.tls" . -}}
{{- dict "secret" (include "tarema.pg.tlsSecret" .) "key" "ca.crt" | toJson -}}
{{- else if and (not .Values.postgresql.bundled) $ext.caSecret -}}
{{- dict "secret" $ext.caSecret "key" ($ext.caSecretKey | default "ca.crt") | toJson -}}
{{- else -}}
{{- dict | toJson -}}
{{- end -}}
{{- end -}}

{{/* The planner's CA: the bundled PostgreSQL's, else planner.database.caSecret, else
   postgresql.external.caSecret (tarema.db.ca). */}}
{{- define "tarema.db.plannerCa" -}}
{{- $db := .Values.planner.database -}}
{{- if and (not (include "tarema.pg.tls" .)) $db.caSecret -}}
{{- dict "secret" $db.caSecret "key" ($db.caSecretKey | default "ca.crt") | toJson -}}
{{- else -}}
{{- include "tarema.db.ca" . -}}
{{- end -}}
{{- end -}}

{{/* Rendering a CA dict (tarema.db.ca): libpq's PGSSLROOTCERT, the read-only mount at
   /etc/tarema/db-ca and the Secret volume holding only that key. Each prints nothing for an
   empty dict. include "tarema.db.caEnv" $ca / "tarema.db.caMount" $ca / "tarema.db.caVolume" $ca */}}
{{- define "tarema.db.caEnv" -}}
{{- if .secret }}
- {name: PGSSLROOTCERT, value: {{ printf "/etc/tarema/db-ca/%s" .key | quote }}}
{{- end }}
{{- end -}}
{{- define "tarema.db.caMount" -}}
{{- if .secret }}
- {name: db-ca, mountPath: /etc/tarema/db-ca, readOnly: true}
{{- end }}
{{- end -}}
{{- define "tarema.db.caVolume" -}}
{{- if .secret }}
- name: db-ca
  secret:
    secretName: {{ .secret }}
    items: [{key: {{ .key | quote }}, path: {{ .key | quote }}}]
{{- end }}
{{- end -}}

{{/* Refuses an external URI (from values) that asks libpq to verify the server
   (sslmode=verify-full or verify-ca) while a client the chart runs has no CA to verify it with:
   tarema's image has no system CAs, so that client could never connect (libpq: "root
   certificate file does not exist"). A CA: postgresql.external.caSecret (for the planner also
   planner.database.caSecret), or an sslrootcert in the URI itself. A URI in existingSecret is
   not visible here (NOTES.txt says it). */}}
{{- define "tarema.db.checkExternalCa" -}}
{{- $ext := .Values.postgresql.external -}}
{{- if and (not .Values.postgresql.bundled) (not $ext.existingSecret) (not $ext.caSecret) $ext.uri -}}
{{- if and (regexMatch "[?&]sslmode=verify-(full|ca)(&|$)" $ext.uri) (not (regexMatch "[?&]sslrootcert=" $ext.uri)) -}}
{{- $without := list -}}
{{- range $c := list "labeler" "webhook" "dam" -}}
{{- if (index $.Values $c).enabled }}{{ $without = append $without $c }}{{ end -}}
{{- end -}}
{{- $p := .Values.planner -}}
{{- if and $p.enabled $p.database.enabled (not $p.database.caSecret) }}{{ $without = append $without "planner" }}{{ end -}}
{{- if $without -}}
{{- fail (printf "postgresql.external.uri asks for sslmode=%s but %s would have no CA to verify the database with (tarema's image has no system CAs): set postgresql.external.caSecret to a Secret with the CA that signed the server's certificate (docs/operations.md, \"Database\")" (regexFind "verify-(full|ca)" $ext.uri) (join ", " $without)) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The labeler's, webhook's and DAM's CA (tarema.db.ca): include "tarema.db.clientEnv" . /
   "tarema.db.clientMounts" . / "tarema.db.clientVolumes" . With a CA, clientEnv also sets
   PGSSLMODE=verify-full: libpq reads it only when the URI sets no sslmode, and its own default
   there, prefer, neither requires TLS nor checks the server against the CA given. */}}
{{- define "tarema.db.clientEnv" -}}
{{- $ca := include "tarema.db.ca" . | fromJson -}}
{{- include "tarema.db.caEnv" $ca -}}
{{- if $ca.secret }}
- {name: PGSSLMODE, value: "verify-full"}
{{- end }}
{{- end -}}
{{- define "tarema.db.clientMounts" -}}
{{- include "tarema.db.caMount" (include "tarema.db.ca" . | fromJson) -}}
{{- end -}}
{{- define "tarema.db.clientVolumes" -}}
{{- include "tarema.db.caVolume" (include "tarema.db.ca" . | fromJson) -}}
{{- end -}}
