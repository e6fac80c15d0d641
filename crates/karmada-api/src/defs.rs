//! Resource definitions for every Karmada kind this crate knows: names, scope, subresources, printer columns and
//! schema, as the API server needs them to serve the kind.

use apimachinery::{Printer, PrinterColumn, ResourceDef};
use schemars::JsonSchema;

use crate::openapi::schema_for;
use crate::{
    apps, autoscaling, cluster, config, mcs, networking, policy, remedy, scheduling, work,
};

/// Category every Karmada kind belongs to (`kubectl get karmada-io`).
pub const CATEGORY: &str = "karmada-io";

/// Definitions of every kind, one per served group/version/kind. Builds every schema, so call it once at
/// start-up and keep the result.
pub fn resource_defs() -> Vec<ResourceDef> {
    let cluster =
        Kind::new::<cluster::Cluster>((cluster::GROUP, cluster::VERSION), "Cluster", "clusters")
            .cluster_scoped()
            .status()
            .printer(Printer::Builtin)
            .build();
    [
        vec![cluster],
        policy_kinds(),
        work_kinds(),
        networking_kinds(),
        autoscaling_kinds(),
        extension_kinds(),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// policy.karmada.io: propagation, override, quota and taint policies.
fn policy_kinds() -> Vec<ResourceDef> {
    let p = (policy::GROUP, policy::VERSION);
    let conflict = || {
        column(
            "CONFLICT-RESOLUTION",
            "string",
            ".spec.conflictResolution",
            "Conflict resolution",
        )
    };
    let priority = || {
        column(
            "PRIORITY",
            "string",
            ".spec.priority",
            "Priority among matching policies",
        )
    };
    vec![
        Kind::new::<policy::PropagationPolicy>(p, "PropagationPolicy", "propagationpolicies")
            .short(&["pp"])
            .columns(vec![conflict(), priority()])
            .build(),
        Kind::new::<policy::ClusterPropagationPolicy>(
            p,
            "ClusterPropagationPolicy",
            "clusterpropagationpolicies",
        )
        .cluster_scoped()
        .short(&["cpp"])
        .columns(vec![conflict(), priority()])
        .build(),
        Kind::new::<policy::OverridePolicy>(p, "OverridePolicy", "overridepolicies")
            .short(&["op"])
            .build(),
        Kind::new::<policy::ClusterOverridePolicy>(
            p,
            "ClusterOverridePolicy",
            "clusteroverridepolicies",
        )
        .cluster_scoped()
        .short(&["cop"])
        .build(),
        Kind::new::<policy::FederatedResourceQuota>(
            p,
            "FederatedResourceQuota",
            "federatedresourcequotas",
        )
        .short(&["frq"])
        .status()
        .columns(vec![
            column(
                "OVERALL",
                "string",
                ".spec.overall",
                "Limits over all clusters",
            ),
            column(
                "OVERALL_USED",
                "string",
                ".status.overallUsed",
                "Usage over all clusters",
            ),
        ])
        .build(),
        Kind::new::<policy::ClusterTaintPolicy>(p, "ClusterTaintPolicy", "clustertaintpolicies")
            .cluster_scoped()
            .short(&["ctp"])
            .build(),
    ]
}

/// work.karmada.io: bindings and Works.
fn work_kinds() -> Vec<ResourceDef> {
    let binding_columns = || {
        vec![
            column(
                "SCHEDULED",
                "string",
                &condition_status("Scheduled"),
                "Whether the binding is scheduled",
            ),
            column(
                "FULLYAPPLIED",
                "string",
                &condition_status("FullyApplied"),
                "Whether every Work is applied",
            ),
        ]
    };
    vec![
        Kind::new::<work::ResourceBinding>(
            (work::GROUP, work::BINDING_VERSION),
            "ResourceBinding",
            "resourcebindings",
        )
        .short(&["rb"])
        .status()
        .columns(binding_columns())
        .build(),
        Kind::new::<work::ClusterResourceBinding>(
            (work::GROUP, work::BINDING_VERSION),
            "ClusterResourceBinding",
            "clusterresourcebindings",
        )
        .cluster_scoped()
        .short(&["crb"])
        .status()
        .columns(binding_columns())
        .build(),
        Kind::new::<work::Work>((work::GROUP, work::WORK_VERSION), "Work", "works")
            .short(&["wk"])
            .status()
            .columns(vec![
                column(
                    "WORKLOAD-KIND",
                    "string",
                    ".spec.workload.manifests[*].kind",
                    "Kind of the manifest",
                ),
                column(
                    "APPLIED",
                    "string",
                    &condition_status("Applied"),
                    "Whether the manifest is applied",
                ),
            ])
            .build(),
    ]
}

/// networking.karmada.io and multicluster.x-k8s.io: multi-cluster Services and Ingresses.
fn networking_kinds() -> Vec<ResourceDef> {
    vec![
        Kind::new::<networking::MultiClusterService>(
            (networking::GROUP, networking::VERSION),
            "MultiClusterService",
            "multiclusterservices",
        )
        .short(&["mcs"])
        .status()
        .build(),
        Kind::new::<networking::MultiClusterIngress>(
            (networking::GROUP, networking::VERSION),
            "MultiClusterIngress",
            "multiclusteringresses",
        )
        .short(&["mci"])
        .status()
        .build(),
        Kind::new::<mcs::ServiceExport>(
            (mcs::GROUP, mcs::VERSION),
            "ServiceExport",
            "serviceexports",
        )
        .short(&["svcex"])
        .status()
        .build(),
        Kind::new::<mcs::ServiceImport>(
            (mcs::GROUP, mcs::VERSION),
            "ServiceImport",
            "serviceimports",
        )
        .short(&["svcim"])
        .status()
        .columns(vec![
            column("TYPE", "string", ".spec.type", "ClusterSetIP or Headless"),
            column("IP", "string", ".spec.ips", "Clusterset IP"),
            PrinterColumn {
                priority: 1,
                ..column(
                    "CLUSTERS",
                    "string",
                    ".status.clusters[*].cluster",
                    "Clusters whose endpoints back the import",
                )
            },
        ])
        .build(),
    ]
}

/// autoscaling.karmada.io: FederatedHPA and CronFederatedHPA.
fn autoscaling_kinds() -> Vec<ResourceDef> {
    let fhpa_reference = || {
        vec![
            column(
                "REFERENCE-KIND",
                "string",
                ".spec.scaleTargetRef.kind",
                "Kind of the scaled target",
            ),
            column(
                "REFERENCE-NAME",
                "string",
                ".spec.scaleTargetRef.name",
                "Name of the scaled target",
            ),
        ]
    };
    vec![
        Kind::new::<autoscaling::FederatedHPA>(
            (autoscaling::GROUP, autoscaling::VERSION),
            "FederatedHPA",
            "federatedhpas",
        )
        .short(&["fhpa"])
        .status()
        .columns({
            let mut columns = fhpa_reference();
            columns.extend([
                column(
                    "MINPODS",
                    "integer",
                    ".spec.minReplicas",
                    "Lower bound of replicas",
                ),
                column(
                    "MAXPODS",
                    "integer",
                    ".spec.maxReplicas",
                    "Upper bound of replicas",
                ),
                column(
                    "REPLICAS",
                    "integer",
                    ".status.currentReplicas",
                    "Current replicas",
                ),
            ]);
            columns
        })
        .build(),
        Kind::new::<autoscaling::CronFederatedHPA>(
            (autoscaling::GROUP, autoscaling::VERSION),
            "CronFederatedHPA",
            "cronfederatedhpas",
        )
        .short(&["cronfhpa"])
        .status()
        .columns(fhpa_reference())
        .build(),
    ]
}

/// The other groups: apps (rebalancer), config (interpreter), remedy and scheduling.
fn extension_kinds() -> Vec<ResourceDef> {
    vec![
        Kind::new::<apps::WorkloadRebalancer>(
            (apps::GROUP, apps::VERSION),
            "WorkloadRebalancer",
            "workloadrebalancers",
        )
        .cluster_scoped()
        .short(&["wr"])
        .status()
        .build(),
        Kind::new::<config::ResourceInterpreterCustomization>(
            (config::GROUP, config::VERSION),
            "ResourceInterpreterCustomization",
            "resourceinterpretercustomizations",
        )
        .cluster_scoped()
        .short(&["ric"])
        .columns(vec![
            column(
                "TARGET-API-VERSION",
                "string",
                ".spec.target.apiVersion",
                "API version of the target",
            ),
            column(
                "TARGET-KIND",
                "string",
                ".spec.target.kind",
                "Kind of the target",
            ),
        ])
        .build(),
        Kind::new::<config::ResourceInterpreterWebhookConfiguration>(
            (config::GROUP, config::VERSION),
            "ResourceInterpreterWebhookConfiguration",
            "resourceinterpreterwebhookconfigurations",
        )
        .cluster_scoped()
        .short(&["riwc"])
        .build(),
        Kind::new::<remedy::Remedy>((remedy::GROUP, remedy::VERSION), "Remedy", "remedies")
            .cluster_scoped()
            .build(),
        Kind::new::<scheduling::SchedulerProfile>(
            (scheduling::GROUP, scheduling::VERSION),
            "SchedulerProfile",
            "schedulerprofiles",
        )
        .cluster_scoped()
        .build(),
    ]
}

fn condition_status(condition_type: &str) -> String {
    format!(".status.conditions[?(@.type==\"{condition_type}\")].status")
}

fn column(name: &str, type_: &str, json_path: &str, description: &str) -> PrinterColumn {
    PrinterColumn {
        name: name.into(),
        type_: type_.into(),
        format: String::new(),
        description: description.into(),
        priority: 0,
        json_path: json_path.into(),
    }
}

/// Builder for one definition; defaults are those of a namespaced custom kind.
struct Kind(ResourceDef);

impl Kind {
    fn new<T: JsonSchema>((group, version): (&str, &str), kind: &str, plural: &str) -> Self {
        Self(ResourceDef {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
            plural: plural.into(),
            singular: kind.to_lowercase(),
            namespaced: true,
            short_names: Vec::new(),
            categories: vec![CATEGORY.into()],
            status_subresource: false,
            scale_subresource: None,
            builtin: false,
            tracks_generation: true,
            printer: Printer::Columns(Vec::new()),
            schema: Some(std::sync::Arc::new(schema_for::<T>())),
            storage_version: true,
        })
    }

    fn cluster_scoped(mut self) -> Self {
        self.0.namespaced = false;
        self
    }

    fn status(mut self) -> Self {
        self.0.status_subresource = true;
        self
    }

    fn short(mut self, names: &[&str]) -> Self {
        self.0.short_names = names.iter().map(|n| (*n).to_string()).collect();
        self
    }

    fn columns(self, columns: Vec<PrinterColumn>) -> Self {
        self.printer(Printer::Columns(columns))
    }

    fn printer(mut self, printer: Printer) -> Self {
        self.0.printer = printer;
        self
    }

    fn build(self) -> ResourceDef {
        self.0
    }
}
