{{/*
Names and labels.
*/}}
{{- define "zippchat-push.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "zippchat-push.fullname" -}}
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

{{/* The name of one component's objects: <fullname>-<component>. */}}
{{- define "zippchat-push.componentName" -}}
{{- printf "%s-%s" (include "zippchat-push.fullname" .root | trunc 50 | trimSuffix "-") .component -}}
{{- end -}}

{{- define "zippchat-push.selectorLabels" -}}
app.kubernetes.io/name: {{ include "zippchat-push.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "zippchat-push.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "zippchat-push.selectorLabels" . }}
app.kubernetes.io/version: {{ .root.Values.image.tag | default .root.Chart.AppVersion | trunc 63 | quote }}
app.kubernetes.io/part-of: zippchat
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
{{- with .root.Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "zippchat-push.image" -}}
{{- $image := .Values.image -}}
{{- if $image.digest -}}
{{- printf "%s@%s" $image.repository $image.digest -}}
{{- else -}}
{{- printf "%s:%s" $image.repository ($image.tag | default .Chart.AppVersion) -}}
{{- end -}}
{{- end -}}

{{- define "zippchat-push.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "zippchat-push.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The worker's ServiceAccount: its own (worker.serviceAccount), or the shared one. */}}
{{- define "zippchat-push.workerServiceAccountName" -}}
{{- $own := .Values.worker.serviceAccount -}}
{{- if $own.create -}}
{{- default (include "zippchat-push.componentName" (dict "root" . "component" "worker")) $own.name -}}
{{- else if $own.name -}}
{{- $own.name -}}
{{- else -}}
{{- include "zippchat-push.serviceAccountName" . -}}
{{- end -}}
{{- end -}}

{{/*
Checks of values the service would refuse at start, so that a wrong release fails at
`helm install` with one line rather than as a crash-looping pod.
*/}}
{{- define "zippchat-push.validate" -}}
{{- $v := .Values -}}
{{- $adc := $v.fcm.adc -}}
{{- if and $v.fcm.credentials.existingSecret $adc.enabled -}}
{{- fail "fcm: set one credential source, fcm.credentials.existingSecret or fcm.adc.enabled, not both" -}}
{{- end -}}
{{- if and $v.fcm.projectId (not $v.fcm.credentials.existingSecret) (not $adc.enabled) -}}
{{- fail "fcm.credentials.existingSecret or fcm.adc.enabled is required with fcm.projectId (the worker's credential source)" -}}
{{- end -}}
{{- if and $v.fcm.credentials.existingSecret (not $v.fcm.projectId) -}}
{{- fail "fcm.projectId is required with fcm.credentials.existingSecret" -}}
{{- end -}}
{{- if and $adc.enabled (not $v.fcm.projectId) -}}
{{- fail "fcm.projectId is required with fcm.adc.enabled" -}}
{{- end -}}
{{- if and (or $adc.credentialConfig.configMap $adc.federatedToken.audience) (not $adc.enabled) -}}
{{- fail "fcm.adc.enabled is required with fcm.adc.credentialConfig.configMap or fcm.adc.federatedToken.audience" -}}
{{- end -}}
{{- if and $v.unifiedPush.vapid.subject (not $v.unifiedPush.vapid.privateKey.existingSecret) -}}
{{- fail "unifiedPush.vapid.privateKey.existingSecret is required with unifiedPush.vapid.subject" -}}
{{- end -}}
{{- if and $v.unifiedPush.vapid.privateKey.existingSecret (not $v.unifiedPush.vapid.subject) -}}
{{- fail "unifiedPush.vapid.subject is required with unifiedPush.vapid.privateKey.existingSecret" -}}
{{- end -}}
{{- $natsAuth := 0 -}}
{{- if $v.nats.credsFile.existingSecret }}{{ $natsAuth = add1 $natsAuth }}{{ end -}}
{{- if or $v.nats.user $v.nats.password.existingSecret }}{{ $natsAuth = add1 $natsAuth }}{{ end -}}
{{- if $v.nats.token.existingSecret }}{{ $natsAuth = add1 $natsAuth }}{{ end -}}
{{- if gt $natsAuth 1 -}}
{{- fail "nats: set one way of authenticating (credsFile, user with password, or token)" -}}
{{- end -}}
{{- if and $v.nats.user (not $v.nats.password.existingSecret) -}}
{{- fail "nats.password.existingSecret is required with nats.user" -}}
{{- end -}}
{{- if and $v.nats.password.existingSecret (not $v.nats.user) -}}
{{- fail "nats.user is required with nats.password.existingSecret" -}}
{{- end -}}
{{- if and $v.api.autoscaling.enabled (gt (int $v.api.autoscaling.minReplicas) (int $v.api.autoscaling.maxReplicas)) -}}
{{- fail "api.autoscaling.minReplicas must not exceed api.autoscaling.maxReplicas" -}}
{{- end -}}
{{- $was := $v.worker.autoscaling -}}
{{- if $was.enabled -}}
{{- if gt (int $was.minReplicas) (int $was.maxReplicas) -}}
{{- fail "worker.autoscaling.minReplicas must not exceed worker.autoscaling.maxReplicas" -}}
{{- end -}}
{{- if not (or $was.temporalBacklog.enabled $was.pacedSignals.enabled) -}}
{{- fail "worker.autoscaling: enable a trigger, temporalBacklog or pacedSignals" -}}
{{- end -}}
{{- if and $was.pacedSignals.enabled (not $was.pacedSignals.serverAddress) -}}
{{- fail "worker.autoscaling.pacedSignals.serverAddress is required with worker.autoscaling.pacedSignals.enabled (your Prometheus, e.g. http://prometheus-operated.monitoring.svc:9090)" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
The Secret files of one process, as a YAML list of
  {name, secret, items: [{key, path}] (all keys when absent), env: {VARIABLE: file path}}.
Each process gets exactly the secrets its configuration reads (src/config/processes.ts):
  database (+ PostgreSQL TLS files)  api, worker, bridge, migrate
  Temporal TLS files, API key        api, worker, bridge
  JWT key                            api
  FCM service account                worker
  VAPID private key                  api, worker
  NATS credentials and TLS files     bridge
Each Secret is mounted with only the keys that process reads, under
/var/run/secrets/zippchat-push/<name>/.
*/}}
{{- define "zippchat-push.secretFiles" -}}
{{- $root := .root -}}
{{- $c := .component -}}
{{- $v := $root.Values -}}
{{- $dir := "/var/run/secrets/zippchat-push" -}}
{{- $fullname := include "zippchat-push.fullname" $root -}}
{{- $files := list -}}
{{- $own := (index $v $c).database | default dict -}}
{{- $dbSecret := $own.existingSecret | default $v.database.existingSecret | default (printf "%s-database" $fullname) -}}
{{- $dbKey := $own.key | default $v.database.key -}}
{{- $files = append $files (dict "name" "database" "secret" $dbSecret "items" (list (dict "key" $dbKey "path" "url")) "env" (dict "DATABASE_URL_FILE" (printf "%s/database/url" $dir))) -}}
{{- with $v.database.tls.existingSecret -}}
{{- $files = append $files (dict "name" "postgres-tls" "secret" . "env" dict) -}}
{{- end -}}
{{- if has $c (list "api" "worker" "bridge") -}}
{{- $t := $v.temporal -}}
{{- with $t.tls.ca.existingSecret -}}
{{- $files = append $files (dict "name" "temporal-ca" "secret" . "items" (list (dict "key" $t.tls.ca.key "path" "ca.crt")) "env" (dict "TEMPORAL_TLS_CA_FILE" (printf "%s/temporal-ca/ca.crt" $dir))) -}}
{{- end -}}
{{- with $t.tls.clientCertificate.existingSecret -}}
{{- $items := list (dict "key" $t.tls.clientCertificate.certKey "path" "tls.crt") (dict "key" $t.tls.clientCertificate.keyKey "path" "tls.key") -}}
{{- $files = append $files (dict "name" "temporal-client" "secret" . "items" $items "env" (dict "TEMPORAL_TLS_CERT_FILE" (printf "%s/temporal-client/tls.crt" $dir) "TEMPORAL_TLS_KEY_FILE" (printf "%s/temporal-client/tls.key" $dir))) -}}
{{- end -}}
{{- with $t.apiKey.existingSecret -}}
{{- $files = append $files (dict "name" "temporal-api-key" "secret" . "items" (list (dict "key" $t.apiKey.key "path" "api-key")) "env" (dict "TEMPORAL_API_KEY_FILE" (printf "%s/temporal-api-key/api-key" $dir))) -}}
{{- end -}}
{{- end -}}
{{- if eq $c "api" -}}
{{- $jwtSecret := $v.jwt.existingSecret | default (printf "%s-jwt" $fullname) -}}
{{- if eq $v.jwt.type "publicKey" -}}
{{- $files = append $files (dict "name" "jwt" "secret" $jwtSecret "items" (list (dict "key" ($v.jwt.key | default "public-key.pem") "path" "public-key.pem")) "env" (dict "JWT_PUBLIC_KEY_FILE" (printf "%s/jwt/public-key.pem" $dir))) -}}
{{- else -}}
{{- $files = append $files (dict "name" "jwt" "secret" $jwtSecret "items" (list (dict "key" ($v.jwt.key | default "secret") "path" "secret")) "env" (dict "JWT_SECRET_FILE" (printf "%s/jwt/secret" $dir))) -}}
{{- end -}}
{{- end -}}
{{- if eq $c "worker" -}}
{{- with $v.fcm.credentials.existingSecret -}}
{{- $files = append $files (dict "name" "fcm" "secret" . "items" (list (dict "key" $v.fcm.credentials.key "path" "service-account.json")) "env" (dict "FCM_CREDENTIALS_JSON_FILE" (printf "%s/fcm/service-account.json" $dir))) -}}
{{- end -}}
{{- end -}}
{{- if has $c (list "api" "worker") -}}
{{- with $v.unifiedPush.vapid.privateKey.existingSecret -}}
{{- $files = append $files (dict "name" "vapid" "secret" . "items" (list (dict "key" $v.unifiedPush.vapid.privateKey.key "path" "private-key")) "env" (dict "PUSH_VAPID_PRIVATE_KEY_FILE" (printf "%s/vapid/private-key" $dir))) -}}
{{- end -}}
{{- end -}}
{{- if eq $c "bridge" -}}
{{- $n := $v.nats -}}
{{- with $n.credsFile.existingSecret -}}
{{- $files = append $files (dict "name" "nats-creds" "secret" . "items" (list (dict "key" $n.credsFile.key "path" "nats.creds")) "env" (dict "NATS_CREDS_FILE" (printf "%s/nats-creds/nats.creds" $dir))) -}}
{{- end -}}
{{- with $n.password.existingSecret -}}
{{- $files = append $files (dict "name" "nats-password" "secret" . "items" (list (dict "key" $n.password.key "path" "password")) "env" (dict "NATS_PASSWORD_FILE" (printf "%s/nats-password/password" $dir))) -}}
{{- end -}}
{{- with $n.token.existingSecret -}}
{{- $files = append $files (dict "name" "nats-token" "secret" . "items" (list (dict "key" $n.token.key "path" "token")) "env" (dict "NATS_TOKEN_FILE" (printf "%s/nats-token/token" $dir))) -}}
{{- end -}}
{{- with $n.tls.ca.existingSecret -}}
{{- $files = append $files (dict "name" "nats-ca" "secret" . "items" (list (dict "key" $n.tls.ca.key "path" "ca.crt")) "env" (dict "NATS_TLS_CA_FILE" (printf "%s/nats-ca/ca.crt" $dir))) -}}
{{- end -}}
{{- with $n.tls.clientCertificate.existingSecret -}}
{{- $items := list (dict "key" $n.tls.clientCertificate.certKey "path" "tls.crt") (dict "key" $n.tls.clientCertificate.keyKey "path" "tls.key") -}}
{{- $files = append $files (dict "name" "nats-client" "secret" . "items" $items "env" (dict "NATS_TLS_CERT_FILE" (printf "%s/nats-client/tls.crt" $dir) "NATS_TLS_KEY_FILE" (printf "%s/nats-client/tls.key" $dir))) -}}
{{- end -}}
{{- end -}}
{{- toYaml $files -}}
{{- end -}}

{{/* One environment variable, unless its value is empty. */}}
{{- define "zippchat-push.envVar" -}}
{{- if not (kindIs "invalid" .value) -}}
{{- $value := .value -}}
{{- /* YAML numbers arrive as float64: 1800000 would print as 1.8e+06. Fractions (0.25) stay as they are. */ -}}
{{- if and (kindIs "float64" $value) (eq (float64 (int64 $value)) $value) }}{{ $value = int64 $value }}{{ end -}}
{{- if ne (toString $value) "" }}
- name: {{ .name }}
  value: {{ toString $value | quote }}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
The environment of one process: its settings and the paths of its Secret
files. Nothing another process reads.
*/}}
{{- define "zippchat-push.env" -}}
{{- $root := .root -}}
{{- $c := .component -}}
{{- $v := $root.Values -}}
{{- include "zippchat-push.envVar" (dict "name" "LOG_LEVEL" "value" $v.logLevel) }}
{{- if has $c (list "api" "worker" "bridge") }}
{{- include "zippchat-push.envVar" (dict "name" "HOST" "value" $v.listenHost) }}
{{- include "zippchat-push.envVar" (dict "name" "TEMPORAL_ADDRESS" "value" $v.temporal.address) }}
{{- include "zippchat-push.envVar" (dict "name" "TEMPORAL_NAMESPACE" "value" $v.temporal.namespace) }}
{{- include "zippchat-push.envVar" (dict "name" "TEMPORAL_TASK_QUEUE" "value" $v.temporal.taskQueue) }}
{{- if $v.temporal.tls.enabled }}
{{- include "zippchat-push.envVar" (dict "name" "TEMPORAL_TLS" "value" "true") }}
{{- end }}
{{- include "zippchat-push.envVar" (dict "name" "TEMPORAL_TLS_SERVER_NAME" "value" $v.temporal.tls.serverName) }}
{{- include "zippchat-push.envVar" (dict "name" "OTEL_EXPORTER_OTLP_ENDPOINT" "value" $v.tracing.otlpEndpoint) }}
{{- if $v.tracing.otlpEndpoint }}
{{- include "zippchat-push.envVar" (dict "name" "OTEL_TRACES_SAMPLER_ARG" "value" $v.tracing.sampleRatio) }}
{{- end }}
{{- end }}
{{- if eq $c "api" }}
{{- include "zippchat-push.envVar" (dict "name" "PORT" "value" $v.api.port) }}
{{- include "zippchat-push.envVar" (dict "name" "JWT_ISSUER" "value" $v.jwt.issuer) }}
{{- include "zippchat-push.envVar" (dict "name" "JWT_AUDIENCE" "value" $v.jwt.audience) }}
{{- end }}
{{- if eq $c "worker" }}
{{- if $v.fcm.adc.enabled }}
{{- include "zippchat-push.envVar" (dict "name" "FCM_USE_ADC" "value" "true") }}
{{- if $v.fcm.adc.credentialConfig.configMap }}
{{- include "zippchat-push.envVar" (dict "name" "GOOGLE_APPLICATION_CREDENTIALS" "value" "/var/run/zippchat-push/gcp/credential-config.json") }}
{{- end }}
{{- end }}
{{- include "zippchat-push.envVar" (dict "name" "WORKER_METRICS_PORT" "value" $v.worker.metricsPort) }}
{{- include "zippchat-push.envVar" (dict "name" "WORKER_SDK_METRICS_PORT" "value" $v.worker.sdkMetricsPort) }}
{{- include "zippchat-push.envVar" (dict "name" "TEMPORAL_UI_URL" "value" $v.temporal.uiUrl) }}
{{- include "zippchat-push.envVar" (dict "name" "FCM_ENDPOINT" "value" $v.fcm.endpoint) }}
{{- include "zippchat-push.envVar" (dict "name" "PUSH_MIN_INTERVAL_MS" "value" $v.push.minIntervalMs) }}
{{- include "zippchat-push.envVar" (dict "name" "PUSH_REWAKE_AFTER_MS" "value" $v.push.rewakeAfterMs) }}
{{- include "zippchat-push.envVar" (dict "name" "PUSH_FCM_WAKE_BURST" "value" $v.push.fcmWakeBurst) }}
{{- include "zippchat-push.envVar" (dict "name" "PUSH_FCM_WAKE_REFILL_MS" "value" $v.push.fcmWakeRefillMs) }}
{{- include "zippchat-push.envVar" (dict "name" "PUSH_FCM_DM_RESERVE" "value" $v.push.fcmDmReserve) }}
{{- end }}
{{- if has $c (list "api" "worker") }}
{{- include "zippchat-push.envVar" (dict "name" "FCM_PROJECT_ID" "value" $v.fcm.projectId) }}
{{- include "zippchat-push.envVar" (dict "name" "PUSH_UP_ALLOW_PRIVATE" "value" $v.unifiedPush.allowPrivate) }}
{{- include "zippchat-push.envVar" (dict "name" "PUSH_UP_ALLOW_HTTP" "value" $v.unifiedPush.allowHttp) }}
{{- include "zippchat-push.envVar" (dict "name" "PUSH_VAPID_SUBJECT" "value" $v.unifiedPush.vapid.subject) }}
{{- end }}
{{- if eq $c "bridge" }}
{{- include "zippchat-push.envVar" (dict "name" "BRIDGE_METRICS_PORT" "value" $v.bridge.metricsPort) }}
{{- include "zippchat-push.envVar" (dict "name" "BRIDGE_START_AT" "value" $v.bridge.startAt) }}
{{- include "zippchat-push.envVar" (dict "name" "BRIDGE_SIGNAL_BACKLOG_MS" "value" $v.bridge.signalBacklogMs) }}
{{- include "zippchat-push.envVar" (dict "name" "NATS_URL" "value" $v.nats.url) }}
{{- include "zippchat-push.envVar" (dict "name" "NATS_USER" "value" $v.nats.user) }}
{{- end }}
{{- range $file := fromYamlArray (include "zippchat-push.secretFiles" .) }}
{{- range $name, $path := $file.env }}
{{- include "zippchat-push.envVar" (dict "name" $name "value" $path) }}
{{- end }}
{{- end }}
{{- with (index $v $c).extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "zippchat-push.secretVolumes" -}}
{{- range $file := fromYamlArray (include "zippchat-push.secretFiles" .) }}
- name: {{ $file.name }}
  secret:
    secretName: {{ $file.secret }}
    # 0440: the process's group (fsGroup) reads, nobody writes.
    defaultMode: 288
    {{- with $file.items }}
    items:
      {{- range . }}
      - key: {{ .key }}
        path: {{ .path }}
      {{- end }}
    {{- end }}
{{- end }}
{{- end -}}

{{/*
The worker's Application Default Credentials files, none secret: the credential configuration
(a ConfigMap) and the projected ServiceAccount token it exchanges (workload identity federation).
*/}}
{{- define "zippchat-push.adcVolumes" -}}
{{- $adc := .root.Values.fcm.adc -}}
{{- if and (eq .component "worker") $adc.enabled -}}
{{- with $adc.credentialConfig.configMap }}
- name: gcp-credential-config
  configMap:
    name: {{ . }}
    defaultMode: 288
    items:
      - key: {{ $adc.credentialConfig.key }}
        path: credential-config.json
{{- end }}
{{- with $adc.federatedToken.audience }}
- name: federated-token
  projected:
    defaultMode: 288
    sources:
      - serviceAccountToken:
          audience: {{ . | quote }}
          expirationSeconds: {{ int $adc.federatedToken.expirationSeconds }}
          path: token
{{- end }}
{{- end -}}
{{- end -}}

{{- define "zippchat-push.adcVolumeMounts" -}}
{{- $adc := .root.Values.fcm.adc -}}
{{- if and (eq .component "worker") $adc.enabled -}}
{{- if $adc.credentialConfig.configMap }}
- name: gcp-credential-config
  mountPath: /var/run/zippchat-push/gcp
  readOnly: true
{{- end }}
{{- if $adc.federatedToken.audience }}
- name: federated-token
  mountPath: /var/run/zippchat-push/federated-token
  readOnly: true
{{- end }}
{{- end -}}
{{- end -}}

{{- define "zippchat-push.secretVolumeMounts" -}}
{{- range $file := fromYamlArray (include "zippchat-push.secretFiles" .) }}
- name: {{ $file.name }}
  mountPath: /var/run/secrets/zippchat-push/{{ $file.name }}
  readOnly: true
{{- end }}
{{- end -}}

{{/*
The pod template of api, worker and bridge: dict root, component, args, ports
(list of {name, port}), probePort (a port name), preStopSleepSeconds.
*/}}
{{- define "zippchat-push.podTemplate" -}}
{{- $root := .root -}}
{{- $v := $root.Values -}}
{{- $cv := index $v .component -}}
metadata:
  labels:
    {{- include "zippchat-push.labels" . | nindent 4 }}
    {{- with $v.podLabels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  {{- with (merge (dict) ($cv.podAnnotations | default dict) $v.podAnnotations) }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
spec:
  serviceAccountName: {{ if eq .component "worker" }}{{ include "zippchat-push.workerServiceAccountName" $root }}{{ else }}{{ include "zippchat-push.serviceAccountName" $root }}{{ end }}
  # No process talks to the Kubernetes API.
  automountServiceAccountToken: false
  {{- with $v.imagePullSecrets }}
  imagePullSecrets:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $v.priorityClassName }}
  priorityClassName: {{ . }}
  {{- end }}
  securityContext:
    {{- toYaml $v.podSecurityContext | nindent 4 }}
  terminationGracePeriodSeconds: {{ $v.terminationGracePeriodSeconds }}
  containers:
    - name: {{ .component }}
      image: {{ include "zippchat-push.image" $root }}
      imagePullPolicy: {{ $v.image.pullPolicy }}
      args: {{ toJson .args }}
      env:
        {{- include "zippchat-push.env" . | trim | nindent 8 }}
      ports:
        {{- range .ports }}
        - name: {{ .name }}
          containerPort: {{ .port }}
          protocol: TCP
        {{- end }}
      # Up: the process runs. Ready: PostgreSQL and Temporal answer (the bridge: NATS too).
      # A failing /readyz takes the pod out of the Service; only /healthz restarts it.
      startupProbe:
        httpGet:
          path: /healthz
          port: {{ .probePort }}
        periodSeconds: 5
        failureThreshold: 36
      livenessProbe:
        httpGet:
          path: /healthz
          port: {{ .probePort }}
        periodSeconds: 10
        timeoutSeconds: 3
        failureThreshold: 3
      readinessProbe:
        httpGet:
          path: /readyz
          port: {{ .probePort }}
        periodSeconds: 5
        # /readyz waits up to 3 s for each dependency.
        timeoutSeconds: 4
        failureThreshold: 2
      {{- with .preStopSleepSeconds }}
      lifecycle:
        preStop:
          sleep:
            seconds: {{ . }}
      {{- end }}
      resources:
        {{- toYaml $cv.resources | nindent 8 }}
      securityContext:
        {{- toYaml $v.securityContext | nindent 8 }}
      volumeMounts:
        - name: tmp
          mountPath: /tmp
        {{- with include "zippchat-push.secretVolumeMounts" . | trim }}
        {{- . | nindent 8 }}
        {{- end }}
        {{- with include "zippchat-push.adcVolumeMounts" . | trim }}
        {{- . | nindent 8 }}
        {{- end }}
        {{- with $cv.extraVolumeMounts }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
  volumes:
    - name: tmp
      emptyDir:
        sizeLimit: 64Mi
    {{- with include "zippchat-push.secretVolumes" . | trim }}
    {{- . | nindent 4 }}
    {{- end }}
    {{- with include "zippchat-push.adcVolumes" . | trim }}
    {{- . | nindent 4 }}
    {{- end }}
    {{- with $cv.extraVolumes }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  {{- with ($cv.nodeSelector | default $v.nodeSelector) }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with ($cv.affinity | default $v.affinity) }}
  affinity:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with ($cv.tolerations | default $v.tolerations) }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $cv.topologySpreadConstraints }}
  topologySpreadConstraints:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end -}}
