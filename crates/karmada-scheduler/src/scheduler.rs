//! One scheduling decision: Filter → Score → Select → AssignReplicas over a snapshot of clusters, trying
//! clusterAffinities terms in order, with the explanation built along the way.
//!
//! Invariants: clusters are processed in name order, so the input order of clusters never changes the result;
//! an infeasible request ends in a [`ScheduleFailure`] with Karmada's reason and a message, never a panic; the
//! explanation covers every cluster of the term that decided (the successful one, or the first that failed).

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use karmada_api::{Placement, ResourceBindingSpec};
use serde_json::Value;

use crate::division::{
    self, ClusterReplicas, DivisionError, DivisionTrace, ReplicaCandidate, TieBreak,
};
use crate::error::InputError;
use crate::estimator::{Resources, estimate};
use crate::explain::{
    AffinityAttempt, ClusterDecision, Explanation, FilterDecision, PluginScore, PluginWeight,
};
use crate::framework::{
    AffinityMatch, Framework, MAX_CLUSTER_SCORE, MIN_CLUSTER_SCORE, SchedulingContext, Verdict,
};
use crate::placement::{GroupField, PreparedPlacement, PreparedTerm, Strategy};
use crate::quantity::parse_milli;
use crate::recorder::{Code, ExtensionPoint, Recorder, Step};
use crate::select::{SelectCandidate, SelectDemand, SelectTrace, select};
use crate::snapshot::ClusterSnapshot;

/// Scheduled condition reasons (Karmada's).
pub const REASON_SUCCESS: &str = "Success";
pub const REASON_NO_CLUSTER_FIT: &str = "NoClusterFit";
pub const REASON_UNSCHEDULABLE: &str = "Unschedulable";
pub const REASON_SCHEDULER_ERROR: &str = "SchedulerError";

/// Why a binding could not be scheduled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduleFailure {
    /// NoClusterFit, Unschedulable or SchedulerError.
    pub reason: &'static str,
    pub message: String,
}

/// What the scheduler is asked to place.
#[derive(Debug, Clone, Copy)]
pub struct ScheduleRequest<'a> {
    pub spec: &'a ResourceBindingSpec,
    pub placement: &'a Placement,
    pub prepared: &'a PreparedPlacement,
    /// The resource template, for plugins that read it.
    pub workload: Option<&'a Value>,
    /// `status.schedulerObservingAffinityName` of the current binding.
    pub observed_affinity: Option<&'a str>,
    /// A reschedule was requested (`rescheduleTriggeredAt` after `lastScheduledTime`).
    pub fresh: bool,
    /// Karmada's `--enable-empty-workload-propagation`: keep selected clusters that got 0 replicas.
    pub keep_empty: bool,
    pub scheduler_name: &'a str,
    /// The clusters' scheduler estimators' answers, when the scheduler asks them (`--enable-scheduler-estimator`).
    pub accurate: Option<&'a AccurateEstimates>,
}

/// Answers of the clusters' scheduler estimators (Karmada's accurate estimator) by cluster name: how many more
/// replicas each can take. A cluster without an answer (none asked, timed out, or Karmada's -1) is estimated by
/// the general estimator alone; one with an answer gets the lesser of the two, as in Karmada.
pub type AccurateEstimates = HashMap<String, i64>;

/// The decision and its explanation.
#[derive(Debug, Clone)]
pub struct ScheduleOutcome {
    pub result: Result<Vec<ClusterReplicas>, ScheduleFailure>,
    /// The clusterAffinities term used (on failure, the one observed before).
    pub affinity_name: Option<String>,
    pub explanation: Explanation,
}

struct TermResult {
    result: Result<Vec<ClusterReplicas>, ScheduleFailure>,
    clusters: Vec<ClusterDecision>,
    selection: SelectTrace,
    divisions: Vec<DivisionTrace>,
}

/// Per-replica requests of the binding in milli-units.
pub fn replica_requests(spec: &ResourceBindingSpec) -> Result<Option<Resources>, InputError> {
    let Some(requirements) = &spec.replica_requirements else {
        return Ok(None);
    };
    requirements
        .resource_request
        .iter()
        .map(|(name, quantity)| {
            parse_milli(&quantity.0)
                .map(|milli| (name.clone(), milli))
                .map_err(|e| {
                    InputError::new(
                        format!("spec.replicaRequirements.resourceRequest.{name}"),
                        e.to_string(),
                    )
                })
        })
        .collect::<Result<Resources, _>>()
        .map(Some)
}

/// Schedules one binding.
pub fn schedule(
    framework: &Framework,
    request: &ScheduleRequest<'_>,
    clusters: &[ClusterSnapshot],
) -> Result<ScheduleOutcome, InputError> {
    schedule_recorded(framework, request, clusters, &mut ())
}

fn sorted_clusters(clusters: &[ClusterSnapshot]) -> Result<Vec<&ClusterSnapshot>, InputError> {
    let mut sorted: Vec<&ClusterSnapshot> = clusters.iter().collect();
    sorted.sort_by(|a, b| a.name.cmp(&b.name));
    if let Some(pair) = sorted.windows(2).find(|pair| pair[0].name == pair[1].name) {
        return Err(InputError::new(
            format!("Cluster {}", pair[0].name),
            "is given twice; each cluster at most once",
        ));
    }
    Ok(sorted)
}

/// The index of the first clusterAffinities term to try.
fn first_term(request: &ScheduleRequest<'_>) -> usize {
    if request.fresh {
        return 0;
    }
    request
        .observed_affinity
        .and_then(|name| {
            request
                .prepared
                .terms
                .iter()
                .position(|t| t.name.as_deref() == Some(name))
        })
        .unwrap_or(0)
}

/// The clusters whose scheduler estimators a decision may ask: those that pass the Filter phase under any term
/// the decision may try (none for a binding that is not a workload). Karmada asks the feasible clusters only;
/// a runner calls this, asks the estimators, and passes the answers in [`ScheduleRequest::accurate`].
pub fn estimator_candidates(
    framework: &Framework,
    request: &ScheduleRequest<'_>,
    clusters: &[ClusterSnapshot],
) -> Result<Vec<Arc<str>>, InputError> {
    let requests = replica_requests(request.spec)?;
    let sorted = sorted_clusters(clusters)?;
    let mut names: BTreeSet<Arc<str>> = BTreeSet::new();
    for term in request.prepared.terms.iter().skip(first_term(request)) {
        let context = SchedulingContext::new(
            request.spec,
            request.placement,
            request.workload,
            term.name.as_deref(),
            requests.as_ref(),
            &term.affinity,
        );
        if !context.is_workload() {
            return Ok(Vec::new());
        }
        for cluster in &sorted {
            if !cluster.deleting()
                && filter_cluster(framework, &context, cluster, &mut ()).is_none()
            {
                names.insert(cluster.name.clone());
            }
        }
    }
    Ok(names.into_iter().collect())
}

/// Runs the filter plugins on one cluster: `None` when it passes, else the first rejection.
fn filter_cluster<R: Recorder>(
    framework: &Framework,
    context: &SchedulingContext<'_>,
    cluster: &ClusterSnapshot,
    recorder: &mut R,
) -> Option<FilterDecision> {
    let started = recorder.mark();
    let mut rejected = None;
    let timed = recorder.times_plugins();
    for weighted in &framework.plugins {
        let call = timed.then(|| recorder.mark());
        let verdict = weighted.plugin.filter(context, cluster);
        if let (Some(call), Some(verdict)) = (call, &verdict) {
            let code = match verdict {
                Verdict::Pass => Code::Success,
                Verdict::Reject(_) => Code::Unschedulable,
            };
            recorder.plugin(call, ExtensionPoint::Filter, &weighted.name, code);
        }
        match verdict {
            None | Some(Verdict::Pass) => {}
            Some(Verdict::Reject(rejection)) => {
                rejected = Some(FilterDecision {
                    plugin: weighted.name.clone(),
                    reason: rejection.reason,
                    detail: rejection.detail,
                });
                break;
            }
        }
    }
    let code = if rejected.is_some() {
        Code::Unschedulable
    } else {
        Code::Success
    };
    recorder.extension_point(started, ExtensionPoint::Filter, code);
    rejected
}

/// Schedules one binding, reporting its timings to `recorder`.
pub fn schedule_recorded<R: Recorder>(
    framework: &Framework,
    request: &ScheduleRequest<'_>,
    clusters: &[ClusterSnapshot],
    recorder: &mut R,
) -> Result<ScheduleOutcome, InputError> {
    let requests = replica_requests(request.spec)?;
    let sorted = sorted_clusters(clusters)?;
    let terms = &request.prepared.terms;
    let start = first_term(request);
    let mut attempts = Vec::new();
    let mut first_failure: Option<(usize, TermResult)> = None;
    for (index, term) in terms.iter().enumerate().skip(start) {
        let outcome = schedule_term(
            framework,
            request,
            term,
            &sorted,
            requests.as_ref(),
            recorder,
        );
        if let Some(name) = &term.name {
            let message = match &outcome.result {
                Ok(_) => "scheduled".to_string(),
                Err(failure) => failure.message.clone(),
            };
            attempts.push(AffinityAttempt {
                name: name.clone(),
                scheduled: outcome.result.is_ok(),
                message,
            });
        }
        if outcome.result.is_ok() {
            return Ok(finish(
                framework,
                request,
                term.name.clone(),
                attempts,
                outcome,
            ));
        }
        if first_failure.is_none() {
            first_failure = Some((index, outcome));
        }
    }
    let Some((_, outcome)) = first_failure else {
        return Err(InputError::new(
            "placement",
            "has no cluster affinity term to schedule with",
        ));
    };
    let kept = request.observed_affinity.map(str::to_string);
    Ok(finish(framework, request, kept, attempts, outcome))
}

fn finish(
    framework: &Framework,
    request: &ScheduleRequest<'_>,
    affinity_name: Option<String>,
    attempts: Vec<AffinityAttempt>,
    outcome: TermResult,
) -> ScheduleOutcome {
    let (scheduled, reason, message, result) = match &outcome.result {
        Ok(result) => (
            true,
            REASON_SUCCESS,
            "Binding has been scheduled successfully.".to_string(),
            result.clone(),
        ),
        Err(failure) => (false, failure.reason, failure.message.clone(), Vec::new()),
    };
    let explanation = Explanation {
        scheduler_name: request.scheduler_name.to_string(),
        profile: framework.profile.clone(),
        profile_generation: framework.generation,
        plugins: framework
            .plugins
            .iter()
            .map(|p| PluginWeight {
                name: p.plugin.name().to_string(),
                weight: p.weight,
            })
            .collect(),
        strategy: request.prepared.strategy.as_str().to_string(),
        replicas: i64::from(request.spec.replicas),
        affinity_name: affinity_name.clone(),
        affinity_attempts: attempts,
        clusters: outcome.clusters,
        selection: outcome.selection,
        divisions: outcome.divisions,
        result,
        scheduled,
        reason: reason.to_string(),
        message,
        notes: Vec::new(),
    };
    ScheduleOutcome {
        result: outcome.result,
        affinity_name,
        explanation,
    }
}

fn failure(reason: &'static str, message: impl Into<String>) -> ScheduleFailure {
    ScheduleFailure {
        reason,
        message: message.into(),
    }
}

/// The clusters of one term that passed the Filter phase, by index into the term's decisions (one per cluster,
/// in cluster order, so a decision's index is its cluster's).
type Feasible<'c> = Vec<(usize, &'c ClusterSnapshot)>;

/// One clusterAffinities term: Karmada's phases in order, each timed as its step.
fn schedule_term<R: Recorder>(
    framework: &Framework,
    request: &ScheduleRequest<'_>,
    term: &PreparedTerm,
    clusters: &[&ClusterSnapshot],
    requests: Option<&Resources>,
    recorder: &mut R,
) -> TermResult {
    let spec = request.spec;
    let context = SchedulingContext::new(
        spec,
        request.placement,
        request.workload,
        term.name.as_deref(),
        requests,
        &term.affinity,
    );
    let failed = |failure, decisions| TermResult {
        result: Err(failure),
        clusters: decisions,
        selection: SelectTrace::default(),
        divisions: Vec::new(),
    };

    let started = recorder.mark();
    let (mut decisions, feasible, fit_reasons) =
        find_clusters_that_fit(framework, &context, clusters, recorder);
    recorder.step(started, Step::Filter);

    let started = recorder.mark();
    prioritize_clusters(
        framework,
        &context,
        term,
        &feasible,
        &mut decisions,
        recorder,
    );
    recorder.step(started, Step::Score);
    if let Some(failure) = no_cluster_fits(clusters.len(), feasible.is_empty(), &fit_reasons) {
        return failed(failure, decisions);
    }

    let started = recorder.mark();
    estimate_available_replicas(request, &context, &feasible, requests, &mut decisions);
    let order = candidate_order(&feasible, &decisions);
    let selected = select_clusters(
        request.prepared,
        &order,
        &decisions,
        clusters,
        spec.replicas,
    );
    recorder.step(started, Step::Select);
    let (selected, selection) = match selected {
        Ok(selected) => selected,
        Err(failure) => return failed(failure, decisions),
    };
    for index in &selected {
        decisions[*index].selected = true;
    }

    let started = recorder.mark();
    let mut divisions = Vec::new();
    let result = assign_replicas(
        request,
        term,
        context.is_workload(),
        &selected,
        clusters,
        &mut decisions,
        &mut divisions,
    );
    recorder.step(started, Step::AssignReplicas);
    TermResult {
        result,
        clusters: decisions,
        selection,
        divisions,
    }
}

/// Filter: runs the filter plugins on every cluster; returns a decision per cluster, the feasible ones, and
/// how many clusters each rejection reason filtered out.
fn find_clusters_that_fit<'c, R: Recorder>(
    framework: &Framework,
    context: &SchedulingContext<'_>,
    clusters: &[&'c ClusterSnapshot],
    recorder: &mut R,
) -> (Vec<ClusterDecision>, Feasible<'c>, BTreeMap<String, usize>) {
    let mut decisions: Vec<ClusterDecision> = Vec::with_capacity(clusters.len());
    let mut fit_reasons: BTreeMap<String, usize> = BTreeMap::new();
    let mut feasible: Feasible<'c> = Vec::new();
    for cluster in clusters {
        let mut decision = ClusterDecision {
            name: cluster.name.clone(),
            filtered_by: None,
            scores: smallvec::SmallVec::new(),
            score: None,
            estimate: None,
            accurate_estimate: None,
            available_replicas: None,
            overflow_order: 0,
            selected: false,
            replicas: None,
        };
        if cluster.deleting() {
            decision.filtered_by = Some(FilterDecision {
                plugin: "".into(),
                reason: "cluster is being deleted".into(),
                detail: None,
            });
        } else {
            decision.filtered_by = filter_cluster(framework, context, cluster, recorder);
            match &decision.filtered_by {
                Some(rejected) => *fit_reasons.entry(rejected.reason.clone()).or_insert(0) += 1,
                None => feasible.push((decisions.len(), cluster)),
            }
        }
        decisions.push(decision);
    }
    (decisions, feasible, fit_reasons)
}

/// Score: the weighted sum of the score plugins per feasible cluster, and its overflow tier.
fn prioritize_clusters<R: Recorder>(
    framework: &Framework,
    context: &SchedulingContext<'_>,
    term: &PreparedTerm,
    feasible: &Feasible<'_>,
    decisions: &mut [ClusterDecision],
    recorder: &mut R,
) {
    let started = recorder.mark();
    let timed = recorder.times_plugins();
    for (index, cluster) in feasible {
        let decision = &mut decisions[*index];
        let mut total = 0i64;
        for weighted in &framework.plugins {
            let call = timed.then(|| recorder.mark());
            if let Some(score) = weighted.plugin.score(context, cluster) {
                if let Some(call) = call {
                    recorder.plugin(call, ExtensionPoint::Score, &weighted.name, Code::Success);
                }
                let score = score.clamp(MIN_CLUSTER_SCORE, MAX_CLUSTER_SCORE);
                total = total.saturating_add(score.saturating_mul(weighted.weight));
                decision.scores.push(PluginScore {
                    plugin: weighted.name.clone(),
                    score,
                    weight: weighted.weight,
                });
            }
        }
        decision.score = Some(total);
        if term.affinity.has_overflow() {
            decision.overflow_order = match context.affinity_match(&cluster.cluster) {
                AffinityMatch::Overflow(order) => order,
                _ => 0,
            };
        }
    }
    if !feasible.is_empty() {
        recorder.extension_point(started, ExtensionPoint::Score, Code::Success);
    }
}

/// Karmada's NoClusterFit message when no cluster is left after Filter.
fn no_cluster_fits(
    clusters: usize,
    none_feasible: bool,
    fit_reasons: &BTreeMap<String, usize>,
) -> Option<ScheduleFailure> {
    if clusters == 0 {
        return Some(failure(
            REASON_NO_CLUSTER_FIT,
            "0/0 clusters are available: no clusters to schedule to.",
        ));
    }
    if !none_feasible {
        return None;
    }
    let reasons: Vec<String> = fit_reasons
        .iter()
        .map(|(reason, count)| format!("{count} {reason}"))
        .collect();
    Some(failure(
        REASON_NO_CLUSTER_FIT,
        format!(
            "0/{clusters} clusters are available: {}.",
            reasons.join(", ")
        ),
    ))
}

/// Available replicas per feasible cluster: the general estimator's, bounded by the accurate estimator's answer
/// when there is one, plus what the cluster already holds.
fn estimate_available_replicas(
    request: &ScheduleRequest<'_>,
    context: &SchedulingContext<'_>,
    feasible: &Feasible<'_>,
    requests: Option<&Resources>,
    decisions: &mut [ClusterDecision],
) {
    let workload = context.is_workload();
    let held: BTreeMap<&str, i64> = request
        .spec
        .clusters
        .iter()
        .map(|t| (t.name.as_str(), i64::from(t.replicas)))
        .collect();
    for (index, cluster) in feasible {
        let decision = &mut decisions[*index];
        if !workload {
            decision.available_replicas = Some(i64::from(i32::MAX));
            continue;
        }
        let estimated = estimate(cluster.summary.as_ref(), &cluster.models, requests);
        let accurate = request
            .accurate
            .and_then(|answers| answers.get(&*cluster.name))
            .copied()
            .filter(|answer| *answer >= 0);
        let allocatable = match accurate {
            Some(answer) => estimated.replicas.min(answer),
            None => estimated.replicas,
        };
        let held = held.get(&*cluster.name).copied().unwrap_or(0);
        decision.available_replicas = Some(allocatable.saturating_add(held));
        decision.accurate_estimate = accurate;
        decision.estimate = Some(estimated);
    }
}

/// Candidate order: overflow tier ascending, score descending, available replicas descending, name ascending
/// (decisions are in name order, so the index stands in for the name).
fn candidate_order(feasible: &Feasible<'_>, decisions: &[ClusterDecision]) -> Vec<usize> {
    let mut keyed: Vec<(usize, Reverse<i64>, Reverse<i64>, usize)> = feasible
        .iter()
        .map(|(index, _)| {
            let decision = &decisions[*index];
            (
                decision.overflow_order,
                Reverse(decision.score.unwrap_or(0)),
                Reverse(decision.available_replicas.unwrap_or(0)),
                *index,
            )
        })
        .collect();
    keyed.sort_unstable();
    keyed.into_iter().map(|(_, _, _, index)| index).collect()
}

/// Select: every candidate, or those the spread constraints pick.
fn select_clusters(
    prepared: &PreparedPlacement,
    order: &[usize],
    decisions: &[ClusterDecision],
    clusters: &[&ClusterSnapshot],
    replicas: i32,
) -> Result<(Vec<usize>, SelectTrace), ScheduleFailure> {
    if prepared.select_all || (prepared.rules.cluster.is_none() && prepared.rules.group.is_none()) {
        let mut trace = SelectTrace::default();
        trace.notes.push(if prepared.select_all {
            "static weights: every feasible cluster is a candidate (spread constraints do not apply)".to_string()
        } else {
            "no spread constraints: every feasible cluster is selected".to_string()
        });
        return Ok((order.to_vec(), trace));
    }
    let replicas = i64::from(replicas);
    let candidates: Vec<SelectCandidate> = order
        .iter()
        .map(|index| {
            let decision = &decisions[*index];
            let cluster = clusters.get(*index).map(|c| &c.cluster);
            SelectCandidate {
                name: decision.name.clone(),
                score: decision.score.unwrap_or(0),
                available: decision.available_replicas.unwrap_or(0),
                group: cluster.and_then(|c| group_value(prepared.group_field.as_ref(), c)),
            }
        })
        .collect();
    let demand = SelectDemand {
        need_replicas: (!prepared.ignore_resources).then_some(replicas),
        replicas,
        duplicated: prepared.ignore_resources,
    };
    select(&candidates, &prepared.rules, demand)
        .map(|(picked, trace)| (picked.into_iter().map(|i| order[i]).collect(), trace))
        .map_err(|error| {
            failure(
                REASON_SCHEDULER_ERROR,
                format!("failed to select clusters: {error}"),
            )
        })
}

/// AssignReplicas: divides the replicas over the selected clusters by the strategy, and records each cluster's
/// share in its decision.
fn assign_replicas(
    request: &ScheduleRequest<'_>,
    term: &PreparedTerm,
    workload: bool,
    selected: &[usize],
    clusters: &[&ClusterSnapshot],
    decisions: &mut [ClusterDecision],
    divisions: &mut Vec<DivisionTrace>,
) -> Result<Vec<ClusterReplicas>, ScheduleFailure> {
    let spec = request.spec;
    let names: Vec<String> = selected
        .iter()
        .map(|i| decisions[*i].name.to_string())
        .collect();
    // Karmada assigns replicas only to workloads of at most one component (multi-component bindings are
    // placed whole, like non-workloads).
    let divides = workload && spec.components.len() <= 1;
    let result = if divides {
        divide_replicas(
            request, term, selected, clusters, decisions, divisions, &names,
        )?
    } else {
        names
            .into_iter()
            .map(|name| ClusterReplicas { name, replicas: 0 })
            .collect()
    };
    // Targets are among the selected clusters: search those, not every decision.
    for target in &result {
        if let Some(index) = selected
            .iter()
            .find(|i| *decisions[**i].name == *target.name)
        {
            decisions[*index].replicas = Some(target.replicas);
        }
    }
    Ok(result)
}

/// The division of a workload's replicas by the placement's strategy, in name order; clusters given none are
/// left out unless `--enable-empty-workload-propagation` keeps them.
fn divide_replicas(
    request: &ScheduleRequest<'_>,
    term: &PreparedTerm,
    selected: &[usize],
    clusters: &[&ClusterSnapshot],
    decisions: &[ClusterDecision],
    divisions: &mut Vec<DivisionTrace>,
    names: &[String],
) -> Result<Vec<ClusterReplicas>, ScheduleFailure> {
    let prepared = request.prepared;
    let replicas = i64::from(request.spec.replicas);
    let tie_break = TieBreak::from_uid(&request.spec.resource.uid);
    let mut result = match prepared.strategy {
        Strategy::Duplicated => division::duplicated(replicas, names),
        Strategy::StaticWeight => {
            let weights: Vec<ClusterReplicas> = selected
                .iter()
                .map(|index| ClusterReplicas {
                    name: decisions[*index].name.to_string(),
                    replicas: static_weight(prepared, clusters.get(*index).map(|c| &c.cluster)),
                })
                .collect();
            let (result, trace) =
                division::static_weight(replicas, &weights, tie_break).map_err(division_failure)?;
            divisions.push(trace);
            result
        }
        Strategy::DynamicWeight | Strategy::Aggregated => assign_dynamic(
            request,
            selected,
            decisions,
            divisions,
            tie_break,
            term.affinity.has_overflow(),
        )?,
    };
    result.retain(|target| target.replicas > 0);
    if request.keep_empty {
        for name in names {
            if !result.iter().any(|target| &target.name == name) {
                result.push(ClusterReplicas {
                    name: name.clone(),
                    replicas: 0,
                });
            }
        }
    }
    result.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(result)
}

/// A cluster's static weight: the largest weight whose affinity it matches (1 each when no weights are given).
fn static_weight(prepared: &PreparedPlacement, cluster: Option<&karmada_api::Cluster>) -> i64 {
    if prepared.static_weights.is_empty() {
        return 1;
    }
    prepared
        .static_weights
        .iter()
        .filter(|(affinity, _)| cluster.is_some_and(|c| affinity.matches(c).is_ok()))
        .map(|(_, weight)| *weight)
        .max()
        .unwrap_or(0)
}

fn division_failure(error: DivisionError) -> ScheduleFailure {
    match error {
        DivisionError::NotEnoughReplicas { .. } => failure(REASON_UNSCHEDULABLE, error.to_string()),
        DivisionError::NoClusters => failure(REASON_SCHEDULER_ERROR, error.to_string()),
    }
}

fn assign_dynamic(
    request: &ScheduleRequest<'_>,
    selected: &[usize],
    decisions: &[ClusterDecision],
    divisions: &mut Vec<DivisionTrace>,
    tie_break: TieBreak,
    tiered: bool,
) -> Result<Vec<ClusterReplicas>, ScheduleFailure> {
    let spec = request.spec;
    let replicas = i64::from(spec.replicas);
    let aggregated = request.prepared.strategy == Strategy::Aggregated;
    let previous: Vec<ClusterReplicas> = spec
        .clusters
        .iter()
        .map(|t| ClusterReplicas {
            name: t.name.clone(),
            replicas: i64::from(t.replicas),
        })
        .collect();
    let candidate = |index: &usize| {
        let decision = &decisions[*index];
        let held = previous
            .iter()
            .filter(|p| *p.name == *decision.name)
            .map(|p| p.replicas)
            .sum::<i64>();
        ReplicaCandidate {
            name: decision.name.to_string(),
            allocatable_replicas: decision.available_replicas.unwrap_or(0) - held,
        }
    };
    if !tiered {
        let candidates: Vec<ReplicaCandidate> = selected.iter().map(candidate).collect();
        let (result, trace) = division::dynamic(
            replicas,
            &candidates,
            &previous,
            request.fresh,
            aggregated,
            tie_break,
        )
        .map_err(division_failure)?;
        divisions.push(trace);
        return Ok(result);
    }
    // Overflow affinities: fill tier 0 (the primary affinity) first, then each overflow tier in order.
    let mut tiers: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for index in selected {
        tiers
            .entry(decisions[*index].overflow_order)
            .or_default()
            .push(*index);
    }
    let mut remaining = replicas;
    let mut result: Vec<ClusterReplicas> = Vec::new();
    for (tier, members) in &tiers {
        if remaining <= 0 {
            break;
        }
        let capacity: i64 = members
            .iter()
            .map(|i| decisions[*i].available_replicas.unwrap_or(0))
            .sum();
        let target = remaining.min(capacity);
        if target <= 0 {
            continue;
        }
        let candidates: Vec<ReplicaCandidate> = members.iter().map(candidate).collect();
        let tier_previous: Vec<ClusterReplicas> = previous
            .iter()
            .filter(|p| candidates.iter().any(|c| c.name == p.name))
            .cloned()
            .collect();
        let (assigned, mut trace) = division::dynamic(
            target,
            &candidates,
            &tier_previous,
            request.fresh,
            aggregated,
            tie_break,
        )
        .map_err(division_failure)?;
        trace.notes.push(format!("overflow tier {tier}: {target} of the remaining {remaining} replicas (tier holds {capacity})"));
        divisions.push(trace);
        remaining -= assigned.iter().map(|a| a.replicas).sum::<i64>();
        result.extend(assigned);
    }
    if remaining > 0 {
        return Err(failure(
            REASON_UNSCHEDULABLE,
            format!(
                "Clusters available replicas {} are not enough to schedule.",
                replicas - remaining
            ),
        ));
    }
    Ok(result)
}

fn group_value<'c>(
    field: Option<&GroupField>,
    cluster: &'c karmada_api::Cluster,
) -> Option<&'c str> {
    let non_empty = |value: &'c str| (!value.is_empty()).then_some(value);
    match field? {
        GroupField::Region => non_empty(&cluster.spec.region),
        GroupField::Provider => non_empty(&cluster.spec.provider),
        GroupField::Zone => crate::affinity::cluster_zones(cluster).first().copied(),
        GroupField::Label(key) => cluster
            .metadata
            .labels
            .as_ref()?
            .get(key)
            .map(String::as_str),
    }
}
