{{/* The Helm-generated certificates (tls.provider helm, or auto without cert-manager) as JSON
   {"server": {tls.crt, tls.key, ca.crt}, "client": {...}} (base64, Secret data): the Secrets'
   data when both exist (kept across upgrades), else generated once per render and remembered
   in .Values.tls, so tls-certificates.yaml and the webhook's caBundle
   (webhook-configuration.yaml) carry the same CA whatever order Helm renders them in. */}}
{{- define "tarema.tls.generated" -}}
{{- if not (hasKey .Values.tls "generatedOnce") -}}
{{- $full := include "tarema.fullname" . -}}
{{- $ns := .Release.Namespace -}}
{{- $srv := lookup "v1" "Secret" $ns (printf "%s-tls" $full) -}}
{{- $cli := lookup "v1" "Secret" $ns (printf "%s-extender-client-tls" $full) -}}
{{- if and $srv $srv.data $cli $cli.data -}}
{{- $_ := set .Values.tls "generatedOnce" (dict "server" $srv.data "client" $cli.data) -}}
{{- else -}}
{{- $dns := include "tarema.tls.dnsNames" . | fromJsonArray -}}
{{- $days := int .Values.tls.validityDays -}}
{{- $ca := genCA (printf "%s-ca" $full) $days -}}
{{- $sc := genSignedCert (printf "%s-server" $full) nil $dns $days $ca -}}
{{- $cc := genSignedCert "kube-scheduler" nil nil $days $ca -}}
{{- $s := dict "tls.crt" ($sc.Cert | b64enc) "tls.key" ($sc.Key | b64enc) "ca.crt" ($ca.Cert | b64enc) -}}
{{- $c := dict "tls.crt" ($cc.Cert | b64enc) "tls.key" ($cc.Key | b64enc) "ca.crt" ($ca.Cert | b64enc) -}}
{{- $_ := set .Values.tls "generatedOnce" (dict "server" $s "client" $c) -}}
{{- end -}}
{{- end -}}
{{- toJson .Values.tls.generatedOnce -}}
{{- end -}}
