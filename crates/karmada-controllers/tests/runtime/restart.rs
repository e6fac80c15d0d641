//! Restart: the propagation path's controllers stopped over a converged federation and started again, as a
//! new controller-manager and scheduler would be. The new ones list what exists, reconcile every template,
//! binding and Work, and find nothing to change: no write to the control plane, none to a member, every
//! object's resourceVersion as it was. Then they still do their job (a scaled template reaches the members).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use karmada_controllers::runtime::MemberClients;
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams,
};
use serde_json::json;

use crate::support::{ControlPlane, Member, eventually};
use crate::write_budget::{
    Counts, NAMESPACE, WORKLOADS, deployment, is_read, print_table, quiet, start_controllers,
    templates_ready, two_members_under_a_divided_policy,
};

fn resource(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural)
}

/// The workloads' Deployments through `client` (templates in the control plane, copies in a member).
fn deployments(client: &kube::Client) -> Api<DynamicObject> {
    Api::namespaced_with(
        client.clone(),
        NAMESPACE,
        &resource("apps", "v1", "Deployment", "deployments"),
    )
}

/// Merge-patches the template `name`.
async fn patch_template(cp: &ControlPlane, name: &str, patch: serde_json::Value) {
    deployments(&cp.client)
        .patch(name, &PatchParams::default(), &Patch::Merge(patch))
        .await
        .expect("patch the template");
}

/// Stops a run of the controllers and waits for every one of them to return.
async fn stop(
    run: &tokio_util::sync::CancellationToken,
    handles: Vec<tokio::task::JoinHandle<()>>,
) {
    run.cancel();
    for handle in handles {
        handle
            .await
            .expect("a controller ends cleanly when cancelled");
    }
}

/// A fresh process's member clients (pinned, as the test bed's members have no credentials Secret to build
/// them from).
async fn fresh_member_clients(cp: &ControlPlane, members: [&Member; 2]) -> MemberClients {
    let fresh = MemberClients::new(cp.client.clone(), Duration::from_secs(5));
    for member in members {
        fresh.pin(&member.name, member.client.clone()).await;
    }
    fresh
}

/// `kind namespace/name` → resourceVersion of every object `api` lists.
async fn versions_of(api: Api<DynamicObject>, kind: &str) -> BTreeMap<String, String> {
    let list = api.list(&ListParams::default()).await.expect("list");
    assert!(!list.items.is_empty(), "no {kind} to compare");
    list.items
        .into_iter()
        .map(|object| {
            let key = format!(
                "{kind} {}/{}",
                object.metadata.namespace.clone().unwrap_or_default(),
                object.metadata.name.clone().unwrap_or_default()
            );
            (key, object.metadata.resource_version.unwrap_or_default())
        })
        .collect()
}

/// The resourceVersions of everything the propagation path writes: templates, bindings and Works in the
/// control plane, and the Deployments in each member.
async fn versions(cp: &ControlPlane, members: &[&Member]) -> BTreeMap<String, String> {
    let mut all = versions_of(deployments(&cp.client), "template").await;
    all.extend(
        versions_of(
            Api::namespaced_with(
                cp.client.clone(),
                NAMESPACE,
                &resource(
                    "work.karmada.io",
                    "v1alpha2",
                    "ResourceBinding",
                    "resourcebindings",
                ),
            ),
            "binding",
        )
        .await,
    );
    all.extend(
        versions_of(
            Api::all_with(
                cp.client.clone(),
                &resource("work.karmada.io", "v1alpha1", "Work", "works"),
            ),
            "work",
        )
        .await,
    );
    for member in members {
        all.extend(
            versions_of(
                deployments(&member.client),
                &format!("{} deployment", member.name),
            )
            .await,
        );
    }
    all
}

/// The Deployment `name`'s replicas in `member`, once it has them.
async fn member_replicas(member: &Member, name: &str) -> Option<i64> {
    let object = deployments(&member.client).get_opt(name).await.ok()??;
    object.data["spec"]["replicas"].as_i64()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restarted_controllers_reconcile_everything_and_write_nothing() {
    let cp = ControlPlane::start().await;
    let (member1, member2) = two_members_under_a_divided_policy(&cp).await;

    let first = Counts::default();
    let first_run = cp.cancel.child_token();
    let handles = start_controllers(&cp, &cp.members, &first, &first_run);
    let started = Instant::now();
    for i in 0..WORKLOADS {
        cp.create("deployments", deployment(&format!("web-{i}")))
            .await;
    }
    eventually("every template reports 2/2 ready replicas", || {
        templates_ready(&cp)
    })
    .await;
    quiet(&first, started).await;
    let before = versions(&cp, &[&member1, &member2]).await;
    assert_eq!(
        before.len(),
        WORKLOADS * 2 + WORKLOADS * 2 * 2,
        "templates, bindings, two Works and two member copies per workload: {before:#?}"
    );

    stop(&first_run, handles).await;

    // A fresh process: new watches, new queues, new member clients.
    let second = Counts::default();
    let second_run = cp.cancel.child_token();
    let fresh_members = fresh_member_clients(&cp, [&member1, &member2]).await;
    let restarted = Instant::now();
    let _handles = start_controllers(&cp, &fresh_members, &second, &second_run);
    // The new controllers have read the state they reconcile (their informers' lists) before the quiet
    // window counts.
    eventually(
        "the restarted controllers list templates, bindings and Works",
        || {
            let seen = second.snapshot();
            let listed = |plural: &str| {
                seen.keys()
                    .any(|key| key.ends_with(&format!("list {plural}")))
            };
            let all = listed("deployments") && listed("resourcebindings") && listed("works");
            async move { all.then_some(()) }
        },
    )
    .await;
    let after_restart = quiet(&second, restarted).await;
    print_table("requests after the restart:", &after_restart);
    let writes: BTreeMap<&String, &u64> = after_restart
        .iter()
        .filter(|(key, _)| !is_read(key))
        .collect();
    assert!(
        writes.is_empty(),
        "a restart over a converged federation writes nothing to the control plane: {writes:#?}"
    );
    let after = versions(&cp, &[&member1, &member2]).await;
    let changed: Vec<(&String, &String, Option<&String>)> = before
        .iter()
        .map(|(key, version)| (key, version, after.get(key)))
        .filter(|(_, version, now)| *now != Some(*version))
        .collect();
    assert!(
        changed.is_empty() && after.len() == before.len(),
        "nothing written in the control plane or the members across the restart (key, before, after): \
         {changed:#?}"
    );

    // The restarted controllers are live: a scaled template is divided anew and reaches both members.
    patch_template(&cp, "web-0", json!({"spec": {"replicas": 4}})).await;
    for member in [&member1, &member2] {
        eventually(&format!("web-0 scaled to 2 in {}", member.name), || async {
            (member_replicas(member, "web-0").await == Some(2)).then_some(())
        })
        .await;
    }
}

/// The image of the Deployment `name` in `member`, once it has one.
async fn member_image(member: &Member, name: &str) -> Option<String> {
    let object = deployments(&member.client).get_opt(name).await.ok()??;
    object
        .data
        .pointer("/spec/template/spec/containers/0/image")
        .and_then(|image| image.as_str())
        .map(str::to_string)
}

/// What a restart leaves alone must not include what changed while the controllers were down: a template
/// edited meanwhile reaches the members after the restart, though the new detector never saw the edit happen.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_template_edited_while_the_controllers_were_down_reaches_the_members() {
    let cp = ControlPlane::start().await;
    let (member1, member2) = two_members_under_a_divided_policy(&cp).await;
    let counts = Counts::default();
    let first_run = cp.cancel.child_token();
    let handles = start_controllers(&cp, &cp.members, &counts, &first_run);
    cp.create("deployments", deployment("web-0")).await;
    for member in [&member1, &member2] {
        eventually(&format!("web-0 in {}", member.name), || async {
            (member_image(member, "web-0").await.as_deref() == Some("nginx:1.27")).then_some(())
        })
        .await;
    }
    stop(&first_run, handles).await;

    // Edited while the controllers are down.
    patch_template(
        &cp,
        "web-0",
        json!({"spec": {"template": {"spec": {"containers": [
                {"name": "main", "image": "nginx:1.28",
                 "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]}}}}),
    )
    .await;

    let fresh_members = fresh_member_clients(&cp, [&member1, &member2]).await;
    let _handles = start_controllers(&cp, &fresh_members, &Counts::default(), &cp.cancel);
    for member in [&member1, &member2] {
        eventually(&format!("the edited image in {}", member.name), || async {
            (member_image(member, "web-0").await.as_deref() == Some("nginx:1.28")).then_some(())
        })
        .await;
    }
}
