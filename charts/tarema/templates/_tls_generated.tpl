{{/* The Helm-generated certificates (tls.provider helm, or auto without cert-manager) as JSON
   {"server": {tls.crt, tls.key, ca.crt}, "client": {...}, "postgresql": {...}} (base64, Secret
   data; "postgresql" only with the bundled PostgreSQL): the Secrets' data when they exist (kept
   across upgrades), else generated once per render and remembered in .Values.tls, so
   tls-certificates.yaml and the webhook's caBundle (webhook-configuration.yaml) carry the same
   CA whatever order Helm renders them in. The CA's key is not kept: a PostgreSQL certificate
   missing from a release whose other certificates exist (an upgrade from a chart without it,
   or postgresql.bundled turned on later) gets a CA of its own, which its Secret's ca.crt names
   and the database's clients verify against. */}}
{{- define "tarema.tls.generated" -}}
{{- if not (hasKey .Values.tls "generatedOnce") -}}
{{- $full := include "tarema.fullname" . -}}
{{- $ns := .Release.Namespace -}}
{{- $days := int .Values.tls.validityDays -}}
{{- $srv := lookup "v1" "Secret" $ns (printf "%s-tls" $full) -}}
{{- $cli := lookup "v1" "Secret" $ns (printf "%s-extender-client-tls" $full) -}}
{{- $gen := dict -}}
{{- $ca := dict -}}
{{- if and $srv $srv.data $cli $cli.data -}}
{{- $gen = dict "server" $srv.data "client" $cli.data -}}
{{- else -}}
{{- $dns := include "tarema.tls.dnsNames" . | fromJsonArray -}}
{{- $ca = genCA (printf "%s-ca" $full) $days -}}
{{- $sc := genSignedCert (printf "%s-server" $full) nil $dns $days $ca -}}
{{- $cc := genSignedCert "kube-scheduler" nil nil $days $ca -}}
{{- $s := dict "tls.crt" ($sc.Cert | b64enc) "tls.key" ($sc.Key | b64enc) "ca.crt" ($ca.Cert | b64enc) -}}
{{- $c := dict "tls.crt" ($cc.Cert | b64enc) "tls.key" ($cc.Key | b64enc) "ca.crt" ($ca.Cert | b64enc) -}}
{{- $gen = dict "server" $s "client" $c -}}
{{- end -}}
{{- if .Values.postgresql.bundled -}}
{{- $pgs := lookup "v1" "Secret" $ns (include "tarema.pg.tlsSecret" .) -}}
{{- if and $pgs $pgs.data -}}
{{- $_ := set $gen "postgresql" $pgs.data -}}
{{- else -}}
{{- if not $ca -}}
{{- $ca = genCA (printf "%s-postgresql-ca" $full) $days -}}
{{- end -}}
{{- $pc := genSignedCert (printf "%s-postgresql" $full) nil (include "tarema.pg.dnsNames" . | fromJsonArray) $days $ca -}}
{{- $_ := set $gen "postgresql" (dict "tls.crt" ($pc.Cert | b64enc) "tls.key" ($pc.Key | b64enc) "ca.crt" ($ca.Cert | b64enc)) -}}
{{- end -}}
{{- end -}}
{{- $_ := set .Values.tls "generatedOnce" $gen -}}
{{- end -}}
{{- toJson .Values.tls.generatedOnce -}}
{{- end -}}
