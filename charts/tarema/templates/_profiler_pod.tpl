{{/* The pod spec of the profiler's run (Job and CronJob): `tarema-profiler run`, which starts
   one bench Job per node under the bench ServiceAccount, groups, and labels the Nodes.
   include "tarema.profiler.podSpec" (list . changedOnly quick) */}}
{{- define "tarema.profiler.podSpec" -}}
{{- $ := index . 0 -}}
{{- $p := $.Values.profiler -}}
serviceAccountName: {{ include "tarema.sa.profiler" $ }}
restartPolicy: Never
{{- include "tarema.podCommon" $ }}
{{- include "tarema.placement" $p }}
containers:
  - name: profiler
    image: {{ include "tarema.image" (list $ $p.image) }}
    imagePullPolicy: {{ $.Values.image.pullPolicy }}
    command: [/usr/local/bin/tarema-profiler]
    args:
      - run
      - --namespace={{ $.Release.Namespace }}
      - --image={{ include "tarema.image" (list $ $p.image) }}
      - --service-account={{ include "tarema.sa.bench" $ }}
      - --timeout={{ $p.run.timeoutSeconds }}
      {{- if index . 1 }}
      - --changed
      {{- end }}
      {{- if index . 2 }}
      - --quick
      {{- end }}
      {{- range $p.extraArgs }}
      - {{ . | quote }}
      {{- end }}
      - --log-level={{ $p.logLevel }}
      - --log-format={{ $p.logFormat }}
    securityContext:
      {{- toYaml $.Values.containerSecurityContext | nindent 6 }}
    resources:
      {{- toYaml $p.resources | nindent 6 }}
    volumeMounts:
      - {name: tmp, mountPath: /tmp}
volumes:
  - name: tmp
    emptyDir: {}
{{- end -}}
