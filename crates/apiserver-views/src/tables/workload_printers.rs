//! Printers for workload kinds (`apps/v1`, `batch/v1`).

use jiff::Timestamp;
use serde_json::{Value, json};

use super::age::{self, age_of};
use super::cells::{self, NONE, at, int, list, name, text};
use super::{BuiltinPrinter, Column, age_column, column, name_column, wide};

pub fn printer(group: &str, kind: &str) -> Option<BuiltinPrinter> {
    let printer = match (group, kind) {
        ("apps", "Deployment") => BuiltinPrinter {
            columns: DEPLOYMENT,
            cells: deployment,
        },
        ("apps", "StatefulSet") => BuiltinPrinter {
            columns: STATEFUL_SET,
            cells: stateful_set,
        },
        ("apps", "DaemonSet") => BuiltinPrinter {
            columns: DAEMON_SET,
            cells: daemon_set,
        },
        ("apps", "ReplicaSet") => BuiltinPrinter {
            columns: REPLICA_SET,
            cells: replica_set,
        },
        ("batch", "Job") => BuiltinPrinter {
            columns: JOB,
            cells: job,
        },
        ("batch", "CronJob") => BuiltinPrinter {
            columns: CRON_JOB,
            cells: cron_job,
        },
        _ => return None,
    };
    Some(printer)
}

const CONTAINERS: Column = wide("Containers", "Names of the containers in the pod template.");
const IMAGES: Column = wide("Images", "Images of the containers in the pod template.");
const SELECTOR: Column = wide("Selector", "Label selector of the managed pods.");

/// Replicas default to 1 when unset, as upstream defaulting does.
fn desired_replicas(object: &Value) -> i64 {
    at(object, &["spec", "replicas"])
        .and_then(Value::as_i64)
        .unwrap_or(1)
}

fn template_columns(template_spec: Option<&Value>, selector: Option<&Value>) -> [Value; 3] {
    let (containers, images) = cells::containers_and_images(template_spec);
    [
        json!(containers),
        json!(images),
        json!(cells::selector_string(selector)),
    ]
}

const DEPLOYMENT: &[Column] = &[
    name_column(),
    column("Ready", "Ready replicas out of desired replicas."),
    column("Up-to-date", "Replicas running the current template."),
    column("Available", "Replicas available to serve."),
    age_column(),
    CONTAINERS,
    IMAGES,
    SELECTOR,
];

fn deployment(object: &Value, now: Timestamp) -> Vec<Value> {
    let [containers, images, selector] = template_columns(
        at(object, &["spec", "template", "spec"]),
        at(object, &["spec", "selector"]),
    );
    vec![
        json!(name(object)),
        json!(format!(
            "{}/{}",
            int(object, &["status", "readyReplicas"]),
            desired_replicas(object)
        )),
        json!(int(object, &["status", "updatedReplicas"])),
        json!(int(object, &["status", "availableReplicas"])),
        age_of(object, now),
        containers,
        images,
        selector,
    ]
}

const STATEFUL_SET: &[Column] = &[
    name_column(),
    column("Ready", "Ready replicas out of desired replicas."),
    age_column(),
    CONTAINERS,
    IMAGES,
];

fn stateful_set(object: &Value, now: Timestamp) -> Vec<Value> {
    let (containers, images) =
        cells::containers_and_images(at(object, &["spec", "template", "spec"]));
    vec![
        json!(name(object)),
        json!(format!(
            "{}/{}",
            int(object, &["status", "readyReplicas"]),
            desired_replicas(object)
        )),
        age_of(object, now),
        json!(containers),
        json!(images),
    ]
}

const DAEMON_SET: &[Column] = &[
    name_column(),
    column("Desired", "Nodes that should run the daemon pod."),
    column("Current", "Nodes running at least one daemon pod."),
    column("Ready", "Nodes with a ready daemon pod."),
    column("Up-to-date", "Nodes running the current template."),
    column("Available", "Nodes with an available daemon pod."),
    column("Node Selector", "Node selector of the pod template."),
    age_column(),
    CONTAINERS,
    IMAGES,
    SELECTOR,
];

fn daemon_set(object: &Value, now: Timestamp) -> Vec<Value> {
    let template = at(object, &["spec", "template", "spec"]);
    let [containers, images, selector] =
        template_columns(template, at(object, &["spec", "selector"]));
    vec![
        json!(name(object)),
        json!(int(object, &["status", "desiredNumberScheduled"])),
        json!(int(object, &["status", "currentNumberScheduled"])),
        json!(int(object, &["status", "numberReady"])),
        json!(int(object, &["status", "updatedNumberScheduled"])),
        json!(int(object, &["status", "numberAvailable"])),
        json!(cells::labels_string(
            template.and_then(|t| t.get("nodeSelector"))
        )),
        age_of(object, now),
        containers,
        images,
        selector,
    ]
}

const REPLICA_SET: &[Column] = &[
    name_column(),
    column("Desired", "Desired replicas."),
    column("Current", "Observed replicas."),
    column("Ready", "Ready replicas."),
    age_column(),
    CONTAINERS,
    IMAGES,
    SELECTOR,
];

fn replica_set(object: &Value, now: Timestamp) -> Vec<Value> {
    let [containers, images, selector] = template_columns(
        at(object, &["spec", "template", "spec"]),
        at(object, &["spec", "selector"]),
    );
    vec![
        json!(name(object)),
        json!(desired_replicas(object)),
        json!(int(object, &["status", "replicas"])),
        json!(int(object, &["status", "readyReplicas"])),
        age_of(object, now),
        containers,
        images,
        selector,
    ]
}

const JOB: &[Column] = &[
    name_column(),
    column("Status", "Overall state of the job."),
    column("Completions", "Succeeded pods out of required completions."),
    column("Duration", "Time the job has been (or was) running."),
    age_column(),
    CONTAINERS,
    IMAGES,
    SELECTOR,
];

fn job(object: &Value, now: Timestamp) -> Vec<Value> {
    let succeeded = int(object, &["status", "succeeded"]);
    let completions = match at(object, &["spec", "completions"]).and_then(Value::as_i64) {
        Some(required) => format!("{succeeded}/{required}"),
        None => match at(object, &["spec", "parallelism"]).and_then(Value::as_i64) {
            Some(parallelism) if parallelism > 1 => format!("{succeeded}/1 of {parallelism}"),
            _ => format!("{succeeded}/1"),
        },
    };
    let started = age::parse_time(&object["status"]["startTime"]);
    let finished = age::parse_time(&object["status"]["completionTime"]);
    let duration = match (started, finished) {
        (None, _) => String::new(),
        (Some(start), None) => age::human_duration(age::seconds_between(start, now)),
        (Some(start), Some(end)) => age::human_duration(age::seconds_between(start, end)),
    };
    let [containers, images, selector] = template_columns(
        at(object, &["spec", "template", "spec"]),
        at(object, &["spec", "selector"]),
    );
    vec![
        json!(name(object)),
        json!(job_status(object)),
        json!(completions),
        json!(duration),
        age_of(object, now),
        containers,
        images,
        selector,
    ]
}

/// Complete / Failed / FailureTarget / SuccessCriteriaMet / Suspended / Terminating / Running.
fn job_status(object: &Value) -> &'static str {
    let has = |type_: &str| {
        cells::condition_status(object, &["status", "conditions"], type_) == Some("True")
    };
    if has("Complete") {
        "Complete"
    } else if has("Failed") {
        "Failed"
    } else if at(object, &["metadata", "deletionTimestamp"]).is_some_and(|v| !v.is_null()) {
        "Terminating"
    } else if has("FailureTarget") {
        "FailureTarget"
    } else if has("SuccessCriteriaMet") {
        "SuccessCriteriaMet"
    } else if has("Suspended") {
        "Suspended"
    } else {
        "Running"
    }
}

const CRON_JOB: &[Column] = &[
    name_column(),
    column("Schedule", "Cron schedule."),
    column("Timezone", "Time zone of the schedule."),
    column("Suspend", "Whether new runs are suspended."),
    column("Active", "Running jobs."),
    column("Last Schedule", "Time since the last run was scheduled."),
    age_column(),
    CONTAINERS,
    IMAGES,
    SELECTOR,
];

fn cron_job(object: &Value, now: Timestamp) -> Vec<Value> {
    let last_schedule = match age::parse_time(&object["status"]["lastScheduleTime"]) {
        Some(then) => age::human_duration(age::seconds_between(then, now)),
        None => NONE.to_string(),
    };
    let job_spec = at(object, &["spec", "jobTemplate", "spec"]);
    let [containers, images, selector] = template_columns(
        job_spec.and_then(|spec| at(spec, &["template", "spec"])),
        job_spec.and_then(|spec| spec.get("selector")),
    );
    vec![
        json!(name(object)),
        json!(text(object, &["spec", "schedule"])),
        json!(cells::or_none(text(object, &["spec", "timeZone"]))),
        json!(cells::bool_or_unset(at(object, &["spec", "suspend"]))),
        json!(list(object, &["status", "active"]).len()),
        json!(last_schedule),
        age_of(object, now),
        containers,
        images,
        selector,
    ]
}
