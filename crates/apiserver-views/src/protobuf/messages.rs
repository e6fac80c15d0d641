//! Field numbers of the Kubernetes messages that kubectl 1.32's `create <generator>` commands
//! send, mapped to their JSON names. The numbers are facts of the upstream `generated.proto`
//! files. Fields not listed are skipped when empty (Go writes every non-pointer field) and
//! refused when they carry data, so nothing a client sends is silently lost.

/// How one field's value is turned into JSON.
pub enum Kind {
    String,
    /// `bytes`, rendered as base64 like Kubernetes' JSON.
    Bytes,
    Bool,
    /// Any varint integer (int32 and int64 alike; negatives arrive sign-extended).
    Int,
    Message(&'static Message),
    /// An embedded Go struct with `json:",inline"`: its fields land in the parent object.
    Inline(&'static Message),
    /// `map<string, V>`: repeated entries with key = 1, value = 2.
    Map(&'static Kind),
    /// `metav1.Time` {seconds = 1, nanos = 2} → RFC 3339.
    Time,
    /// `intstr.IntOrString` {type = 1, intVal = 2, strVal = 3} → number or string.
    IntOrString,
    /// `resource.Quantity` {string = 1} → string.
    Quantity,
    /// Dropped whatever it holds: fields the server recomputes anyway (`metadata.managedFields`, which an
    /// update without them keeps as stored).
    Ignored,
}

/// One known field.
pub struct Field {
    pub number: u32,
    pub name: &'static str,
    pub kind: Kind,
    pub repeated: bool,
    /// Pointer fields in Go: present means set, even when zero. Other fields are omitted from
    /// JSON when zero, as Go's `omitempty` would.
    pub presence: bool,
}

pub struct Message {
    pub fields: &'static [Field],
}

impl Message {
    pub fn field(&self, number: u32) -> Option<&Field> {
        self.fields.iter().find(|field| field.number == number)
    }
}

pub(super) const fn f(number: u32, name: &'static str, kind: Kind) -> Field {
    Field {
        number,
        name,
        kind,
        repeated: false,
        presence: false,
    }
}

/// A pointer (optional) field: kept even when zero.
pub(super) const fn opt(number: u32, name: &'static str, kind: Kind) -> Field {
    Field {
        number,
        name,
        kind,
        repeated: false,
        presence: true,
    }
}

pub(super) const fn rep(number: u32, name: &'static str, kind: Kind) -> Field {
    Field {
        number,
        name,
        kind,
        repeated: true,
        presence: false,
    }
}

const STRING_MAP: Kind = Kind::Map(&Kind::String);

pub static TYPE_META: Message = Message {
    fields: &[f(1, "apiVersion", Kind::String), f(2, "kind", Kind::String)],
};

/// `runtime.Unknown`, the envelope inside the `k8s\0` magic.
pub static UNKNOWN: Message = Message {
    fields: &[
        f(1, "typeMeta", Kind::Message(&TYPE_META)),
        f(2, "raw", Kind::Bytes),
        f(3, "contentEncoding", Kind::String),
        f(4, "contentType", Kind::String),
    ],
};

pub(super) static OWNER_REFERENCE: Message = Message {
    fields: &[
        f(1, "kind", Kind::String),
        f(3, "name", Kind::String),
        f(4, "uid", Kind::String),
        f(5, "apiVersion", Kind::String),
        opt(6, "controller", Kind::Bool),
        opt(7, "blockOwnerDeletion", Kind::Bool),
    ],
};

pub(super) static OBJECT_META: Message = Message {
    fields: &[
        f(1, "name", Kind::String),
        f(2, "generateName", Kind::String),
        f(3, "namespace", Kind::String),
        f(5, "uid", Kind::String),
        f(6, "resourceVersion", Kind::String),
        f(7, "generation", Kind::Int),
        f(8, "creationTimestamp", Kind::Time),
        f(11, "labels", STRING_MAP),
        f(12, "annotations", STRING_MAP),
        rep(13, "ownerReferences", Kind::Message(&OWNER_REFERENCE)),
        rep(14, "finalizers", Kind::String),
    ],
};

static OBJECT_REFERENCE: Message = Message {
    fields: &[
        f(1, "kind", Kind::String),
        f(2, "namespace", Kind::String),
        f(3, "name", Kind::String),
        f(4, "uid", Kind::String),
        f(5, "apiVersion", Kind::String),
        f(6, "resourceVersion", Kind::String),
        f(7, "fieldPath", Kind::String),
    ],
};

static LOCAL_OBJECT_REFERENCE: Message = Message {
    fields: &[f(1, "name", Kind::String)],
};

pub static CONFIG_MAP: Message = Message {
    fields: &[
        f(1, "metadata", Kind::Message(&OBJECT_META)),
        f(2, "data", STRING_MAP),
        f(3, "binaryData", Kind::Map(&Kind::Bytes)),
        opt(4, "immutable", Kind::Bool),
    ],
};

pub static SECRET: Message = Message {
    fields: &[
        f(1, "metadata", Kind::Message(&OBJECT_META)),
        f(2, "data", Kind::Map(&Kind::Bytes)),
        f(3, "type", Kind::String),
        f(4, "stringData", STRING_MAP),
        opt(5, "immutable", Kind::Bool),
    ],
};

static NAMESPACE_SPEC: Message = Message {
    fields: &[rep(1, "finalizers", Kind::String)],
};
static NAMESPACE_STATUS: Message = Message {
    fields: &[f(1, "phase", Kind::String)],
};

pub static NAMESPACE: Message = Message {
    fields: &[
        f(1, "metadata", Kind::Message(&OBJECT_META)),
        f(2, "spec", Kind::Message(&NAMESPACE_SPEC)),
        f(3, "status", Kind::Message(&NAMESPACE_STATUS)),
    ],
};

pub static SERVICE_ACCOUNT: Message = Message {
    fields: &[
        f(1, "metadata", Kind::Message(&OBJECT_META)),
        rep(2, "secrets", Kind::Message(&OBJECT_REFERENCE)),
        rep(
            3,
            "imagePullSecrets",
            Kind::Message(&LOCAL_OBJECT_REFERENCE),
        ),
        opt(4, "automountServiceAccountToken", Kind::Bool),
    ],
};

static LABEL_SELECTOR_REQUIREMENT: Message = Message {
    fields: &[
        f(1, "key", Kind::String),
        f(2, "operator", Kind::String),
        rep(3, "values", Kind::String),
    ],
};

pub(super) static LABEL_SELECTOR: Message = Message {
    fields: &[
        f(1, "matchLabels", STRING_MAP),
        rep(
            2,
            "matchExpressions",
            Kind::Message(&LABEL_SELECTOR_REQUIREMENT),
        ),
    ],
};

static CONTAINER_PORT: Message = Message {
    fields: &[
        f(1, "name", Kind::String),
        f(2, "hostPort", Kind::Int),
        f(3, "containerPort", Kind::Int),
        f(4, "protocol", Kind::String),
        f(5, "hostIP", Kind::String),
    ],
};

static ENV_VAR: Message = Message {
    fields: &[
        f(1, "name", Kind::String),
        f(2, "value", Kind::String),
        opt(3, "valueFrom", Kind::Message(&ENV_VAR_SOURCE)),
    ],
};

static RESOURCE_REQUIREMENTS: Message = Message {
    fields: &[
        f(1, "limits", Kind::Map(&Kind::Quantity)),
        f(2, "requests", Kind::Map(&Kind::Quantity)),
    ],
};

static KEY_TO_PATH: Message = Message {
    fields: &[
        f(1, "key", Kind::String),
        f(2, "path", Kind::String),
        opt(3, "mode", Kind::Int),
    ],
};

static HOST_PATH_SOURCE: Message = Message {
    fields: &[f(1, "path", Kind::String), opt(2, "type", Kind::String)],
};

static EMPTY_DIR_SOURCE: Message = Message {
    fields: &[
        f(1, "medium", Kind::String),
        opt(2, "sizeLimit", Kind::Quantity),
    ],
};

static SECRET_SOURCE: Message = Message {
    fields: &[
        f(1, "secretName", Kind::String),
        rep(2, "items", Kind::Message(&KEY_TO_PATH)),
        opt(3, "defaultMode", Kind::Int),
        opt(4, "optional", Kind::Bool),
    ],
};

static CLAIM_SOURCE: Message = Message {
    fields: &[
        f(1, "claimName", Kind::String),
        f(2, "readOnly", Kind::Bool),
    ],
};

static CONFIG_MAP_SOURCE: Message = Message {
    fields: &[
        f(
            1,
            "localObjectReference",
            Kind::Inline(&LOCAL_OBJECT_REFERENCE),
        ),
        rep(2, "items", Kind::Message(&KEY_TO_PATH)),
        opt(3, "defaultMode", Kind::Int),
        opt(4, "optional", Kind::Bool),
    ],
};

/// Only the everyday volume sources; others are refused as unknown fields.
static VOLUME_SOURCE: Message = Message {
    fields: &[
        opt(1, "hostPath", Kind::Message(&HOST_PATH_SOURCE)),
        opt(2, "emptyDir", Kind::Message(&EMPTY_DIR_SOURCE)),
        opt(6, "secret", Kind::Message(&SECRET_SOURCE)),
        opt(10, "persistentVolumeClaim", Kind::Message(&CLAIM_SOURCE)),
        opt(19, "configMap", Kind::Message(&CONFIG_MAP_SOURCE)),
    ],
};

static VOLUME: Message = Message {
    fields: &[
        f(1, "name", Kind::String),
        f(2, "volumeSource", Kind::Inline(&VOLUME_SOURCE)),
    ],
};

static VOLUME_MOUNT: Message = Message {
    fields: &[
        f(1, "name", Kind::String),
        f(2, "readOnly", Kind::Bool),
        f(3, "mountPath", Kind::String),
        f(4, "subPath", Kind::String),
    ],
};

static OBJECT_FIELD_SELECTOR: Message = Message {
    fields: &[
        f(1, "apiVersion", Kind::String),
        f(2, "fieldPath", Kind::String),
    ],
};

static KEY_SELECTOR: Message = Message {
    fields: &[
        f(
            1,
            "localObjectReference",
            Kind::Inline(&LOCAL_OBJECT_REFERENCE),
        ),
        f(2, "key", Kind::String),
        opt(3, "optional", Kind::Bool),
    ],
};

static ENV_VAR_SOURCE: Message = Message {
    fields: &[
        opt(1, "fieldRef", Kind::Message(&OBJECT_FIELD_SELECTOR)),
        opt(3, "configMapKeyRef", Kind::Message(&KEY_SELECTOR)),
        opt(4, "secretKeyRef", Kind::Message(&KEY_SELECTOR)),
    ],
};

static ENV_SOURCE_REFERENCE: Message = Message {
    fields: &[
        f(
            1,
            "localObjectReference",
            Kind::Inline(&LOCAL_OBJECT_REFERENCE),
        ),
        opt(2, "optional", Kind::Bool),
    ],
};

static ENV_FROM_SOURCE: Message = Message {
    fields: &[
        f(1, "prefix", Kind::String),
        opt(2, "configMapRef", Kind::Message(&ENV_SOURCE_REFERENCE)),
        opt(3, "secretRef", Kind::Message(&ENV_SOURCE_REFERENCE)),
    ],
};

static TOLERATION: Message = Message {
    fields: &[
        f(1, "key", Kind::String),
        f(2, "operator", Kind::String),
        f(3, "value", Kind::String),
        f(4, "effect", Kind::String),
        opt(5, "tolerationSeconds", Kind::Int),
    ],
};

static CONTAINER: Message = Message {
    fields: &[
        f(1, "name", Kind::String),
        f(2, "image", Kind::String),
        rep(3, "command", Kind::String),
        rep(4, "args", Kind::String),
        f(5, "workingDir", Kind::String),
        rep(6, "ports", Kind::Message(&CONTAINER_PORT)),
        rep(7, "env", Kind::Message(&ENV_VAR)),
        f(8, "resources", Kind::Message(&RESOURCE_REQUIREMENTS)),
        rep(9, "volumeMounts", Kind::Message(&VOLUME_MOUNT)),
        f(13, "terminationMessagePath", Kind::String),
        f(14, "imagePullPolicy", Kind::String),
        f(16, "stdin", Kind::Bool),
        f(17, "stdinOnce", Kind::Bool),
        f(18, "tty", Kind::Bool),
        rep(19, "envFrom", Kind::Message(&ENV_FROM_SOURCE)),
        f(20, "terminationMessagePolicy", Kind::String),
    ],
};

static POD_SPEC: Message = Message {
    fields: &[
        rep(1, "volumes", Kind::Message(&VOLUME)),
        rep(2, "containers", Kind::Message(&CONTAINER)),
        f(3, "restartPolicy", Kind::String),
        opt(4, "terminationGracePeriodSeconds", Kind::Int),
        opt(5, "activeDeadlineSeconds", Kind::Int),
        f(6, "dnsPolicy", Kind::String),
        f(7, "nodeSelector", STRING_MAP),
        f(8, "serviceAccountName", Kind::String),
        f(9, "serviceAccount", Kind::String),
        f(10, "nodeName", Kind::String),
        f(11, "hostNetwork", Kind::Bool),
        f(12, "hostPID", Kind::Bool),
        f(13, "hostIPC", Kind::Bool),
        rep(
            15,
            "imagePullSecrets",
            Kind::Message(&LOCAL_OBJECT_REFERENCE),
        ),
        f(16, "hostname", Kind::String),
        f(17, "subdomain", Kind::String),
        f(19, "schedulerName", Kind::String),
        rep(20, "initContainers", Kind::Message(&CONTAINER)),
        opt(21, "automountServiceAccountToken", Kind::Bool),
        rep(22, "tolerations", Kind::Message(&TOLERATION)),
    ],
};

static POD_TEMPLATE_SPEC: Message = Message {
    fields: &[
        f(1, "metadata", Kind::Message(&OBJECT_META)),
        f(2, "spec", Kind::Message(&POD_SPEC)),
    ],
};

static ROLLING_UPDATE_DEPLOYMENT: Message = Message {
    fields: &[
        opt(1, "maxUnavailable", Kind::IntOrString),
        opt(2, "maxSurge", Kind::IntOrString),
    ],
};

static DEPLOYMENT_STRATEGY: Message = Message {
    fields: &[
        f(1, "type", Kind::String),
        opt(
            2,
            "rollingUpdate",
            Kind::Message(&ROLLING_UPDATE_DEPLOYMENT),
        ),
    ],
};

static DEPLOYMENT_SPEC: Message = Message {
    fields: &[
        opt(1, "replicas", Kind::Int),
        opt(2, "selector", Kind::Message(&LABEL_SELECTOR)),
        f(3, "template", Kind::Message(&POD_TEMPLATE_SPEC)),
        f(4, "strategy", Kind::Message(&DEPLOYMENT_STRATEGY)),
        f(5, "minReadySeconds", Kind::Int),
        opt(6, "revisionHistoryLimit", Kind::Int),
        f(7, "paused", Kind::Bool),
        opt(9, "progressDeadlineSeconds", Kind::Int),
    ],
};

pub static DEPLOYMENT: Message = Message {
    fields: &[
        f(1, "metadata", Kind::Message(&OBJECT_META)),
        f(2, "spec", Kind::Message(&DEPLOYMENT_SPEC)),
    ],
};

static SERVICE_PORT: Message = Message {
    fields: &[
        f(1, "name", Kind::String),
        f(2, "protocol", Kind::String),
        f(3, "port", Kind::Int),
        f(4, "targetPort", Kind::IntOrString),
        f(5, "nodePort", Kind::Int),
        opt(6, "appProtocol", Kind::String),
    ],
};

static SERVICE_SPEC: Message = Message {
    fields: &[
        rep(1, "ports", Kind::Message(&SERVICE_PORT)),
        f(2, "selector", STRING_MAP),
        f(3, "clusterIP", Kind::String),
        f(4, "type", Kind::String),
        rep(5, "externalIPs", Kind::String),
        f(7, "sessionAffinity", Kind::String),
        f(8, "loadBalancerIP", Kind::String),
        rep(9, "loadBalancerSourceRanges", Kind::String),
        f(10, "externalName", Kind::String),
        f(11, "externalTrafficPolicy", Kind::String),
        f(12, "healthCheckNodePort", Kind::Int),
        f(13, "publishNotReadyAddresses", Kind::Bool),
        opt(17, "ipFamilyPolicy", Kind::String),
        rep(18, "clusterIPs", Kind::String),
        rep(19, "ipFamilies", Kind::String),
        opt(20, "allocateLoadBalancerNodePorts", Kind::Bool),
        opt(21, "loadBalancerClass", Kind::String),
        opt(22, "internalTrafficPolicy", Kind::String),
    ],
};

pub static SERVICE: Message = Message {
    fields: &[
        f(1, "metadata", Kind::Message(&OBJECT_META)),
        f(2, "spec", Kind::Message(&SERVICE_SPEC)),
    ],
};

static JOB_SPEC: Message = Message {
    fields: &[
        opt(1, "parallelism", Kind::Int),
        opt(2, "completions", Kind::Int),
        opt(3, "activeDeadlineSeconds", Kind::Int),
        opt(4, "selector", Kind::Message(&LABEL_SELECTOR)),
        opt(5, "manualSelector", Kind::Bool),
        f(6, "template", Kind::Message(&POD_TEMPLATE_SPEC)),
        opt(7, "backoffLimit", Kind::Int),
        opt(8, "ttlSecondsAfterFinished", Kind::Int),
        opt(9, "completionMode", Kind::String),
        opt(10, "suspend", Kind::Bool),
    ],
};

pub static JOB: Message = Message {
    fields: &[
        f(1, "metadata", Kind::Message(&OBJECT_META)),
        f(2, "spec", Kind::Message(&JOB_SPEC)),
    ],
};

static JOB_TEMPLATE_SPEC: Message = Message {
    fields: &[
        f(1, "metadata", Kind::Message(&OBJECT_META)),
        f(2, "spec", Kind::Message(&JOB_SPEC)),
    ],
};

static CRON_JOB_SPEC: Message = Message {
    fields: &[
        f(1, "schedule", Kind::String),
        opt(2, "startingDeadlineSeconds", Kind::Int),
        f(3, "concurrencyPolicy", Kind::String),
        opt(4, "suspend", Kind::Bool),
        f(5, "jobTemplate", Kind::Message(&JOB_TEMPLATE_SPEC)),
        opt(6, "successfulJobsHistoryLimit", Kind::Int),
        opt(7, "failedJobsHistoryLimit", Kind::Int),
        opt(8, "timeZone", Kind::String),
    ],
};

pub static CRON_JOB: Message = Message {
    fields: &[
        f(1, "metadata", Kind::Message(&OBJECT_META)),
        f(2, "spec", Kind::Message(&CRON_JOB_SPEC)),
    ],
};

static POLICY_RULE: Message = Message {
    fields: &[
        rep(1, "verbs", Kind::String),
        rep(2, "apiGroups", Kind::String),
        rep(3, "resources", Kind::String),
        rep(4, "resourceNames", Kind::String),
        rep(5, "nonResourceURLs", Kind::String),
    ],
};

/// Role and ClusterRole share the layout (ClusterRole's `aggregationRule`, field 3, is refused).
pub static ROLE: Message = Message {
    fields: &[
        f(1, "metadata", Kind::Message(&OBJECT_META)),
        rep(2, "rules", Kind::Message(&POLICY_RULE)),
    ],
};

static SUBJECT: Message = Message {
    fields: &[
        f(1, "kind", Kind::String),
        f(2, "apiGroup", Kind::String),
        f(3, "name", Kind::String),
        f(4, "namespace", Kind::String),
    ],
};

static ROLE_REF: Message = Message {
    fields: &[
        f(1, "apiGroup", Kind::String),
        f(2, "kind", Kind::String),
        f(3, "name", Kind::String),
    ],
};

/// RoleBinding and ClusterRoleBinding share the layout.
pub static ROLE_BINDING: Message = Message {
    fields: &[
        f(1, "metadata", Kind::Message(&OBJECT_META)),
        rep(2, "subjects", Kind::Message(&SUBJECT)),
        f(3, "roleRef", Kind::Message(&ROLE_REF)),
    ],
};

static SERVICE_BACKEND_PORT: Message = Message {
    fields: &[f(1, "name", Kind::String), f(2, "number", Kind::Int)],
};

static INGRESS_SERVICE_BACKEND: Message = Message {
    fields: &[
        f(1, "name", Kind::String),
        f(2, "port", Kind::Message(&SERVICE_BACKEND_PORT)),
    ],
};

static INGRESS_BACKEND: Message = Message {
    fields: &[opt(4, "service", Kind::Message(&INGRESS_SERVICE_BACKEND))],
};

static HTTP_INGRESS_PATH: Message = Message {
    fields: &[
        f(1, "path", Kind::String),
        f(2, "backend", Kind::Message(&INGRESS_BACKEND)),
        opt(3, "pathType", Kind::String),
    ],
};

static HTTP_INGRESS_RULE_VALUE: Message = Message {
    fields: &[rep(1, "paths", Kind::Message(&HTTP_INGRESS_PATH))],
};

static INGRESS_RULE_VALUE: Message = Message {
    fields: &[opt(1, "http", Kind::Message(&HTTP_INGRESS_RULE_VALUE))],
};

static INGRESS_RULE: Message = Message {
    fields: &[
        f(1, "host", Kind::String),
        f(2, "ingressRuleValue", Kind::Inline(&INGRESS_RULE_VALUE)),
    ],
};

static INGRESS_TLS: Message = Message {
    fields: &[
        rep(1, "hosts", Kind::String),
        f(2, "secretName", Kind::String),
    ],
};

static INGRESS_SPEC: Message = Message {
    fields: &[
        opt(1, "defaultBackend", Kind::Message(&INGRESS_BACKEND)),
        rep(2, "tls", Kind::Message(&INGRESS_TLS)),
        rep(3, "rules", Kind::Message(&INGRESS_RULE)),
        opt(4, "ingressClassName", Kind::String),
    ],
};

pub static INGRESS: Message = Message {
    fields: &[
        f(1, "metadata", Kind::Message(&OBJECT_META)),
        f(2, "spec", Kind::Message(&INGRESS_SPEC)),
    ],
};

/// The kinds whose protobuf bodies are understood, by apiVersion and kind.
pub fn message_for(api_version: &str, kind: &str) -> Option<&'static Message> {
    let message = match (api_version, kind) {
        ("v1", "ConfigMap") => &CONFIG_MAP,
        ("v1", "Secret") => &SECRET,
        ("v1", "Namespace") => &NAMESPACE,
        ("v1", "ServiceAccount") => &SERVICE_ACCOUNT,
        ("v1", "Service") => &SERVICE,
        ("apps/v1", "Deployment") => &DEPLOYMENT,
        ("batch/v1", "Job") => &JOB,
        ("batch/v1", "CronJob") => &CRON_JOB,
        ("rbac.authorization.k8s.io/v1", "Role" | "ClusterRole") => &ROLE,
        ("rbac.authorization.k8s.io/v1", "RoleBinding" | "ClusterRoleBinding") => &ROLE_BINDING,
        ("networking.k8s.io/v1", "Ingress") => &INGRESS,
        ("autoscaling/v1", "HorizontalPodAutoscaler") => {
            &super::autoscaling::HORIZONTAL_POD_AUTOSCALER
        }
        ("policy/v1", "PodDisruptionBudget") => &super::policy::POD_DISRUPTION_BUDGET,
        ("scheduling.k8s.io/v1", "PriorityClass") => &super::policy::PRIORITY_CLASS,
        ("v1", "ResourceQuota") => &super::policy::RESOURCE_QUOTA,
        ("certificates.k8s.io/v1", "CertificateSigningRequest") => {
            &super::certificates::CERTIFICATE_SIGNING_REQUEST
        }
        (
            "authorization.k8s.io/v1",
            "SelfSubjectAccessReview" | "SubjectAccessReview" | "LocalSubjectAccessReview",
        ) => &super::reviews::ACCESS_REVIEW,
        ("authorization.k8s.io/v1", "SelfSubjectRulesReview") => &super::reviews::RULES_REVIEW,
        ("authentication.k8s.io/v1", "SelfSubjectReview") => &super::reviews::SELF_SUBJECT_REVIEW,
        ("authentication.k8s.io/v1", "TokenRequest") => &super::reviews::TOKEN_REQUEST,
        _ => return None,
    };
    Some(message)
}

/// Human-readable list for error messages.
pub const SUPPORTED: &str = "v1 ConfigMap, Secret, Namespace, ServiceAccount, Service, ResourceQuota; apps/v1 Deployment; \
     batch/v1 Job, CronJob; rbac.authorization.k8s.io/v1 Role, ClusterRole, RoleBinding, ClusterRoleBinding; \
     networking.k8s.io/v1 Ingress; autoscaling/v1 HorizontalPodAutoscaler; policy/v1 PodDisruptionBudget; scheduling.k8s.io/v1 PriorityClass; \
     certificates.k8s.io/v1 CertificateSigningRequest; authorization.k8s.io/v1 SelfSubjectAccessReview, \
     SubjectAccessReview, LocalSubjectAccessReview, SelfSubjectRulesReview; authentication.k8s.io/v1 SelfSubjectReview, TokenRequest";
