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
    Counts, NAMESPACE, WORKLOADS, counting_client, deployment, is_read, print_table, quiet,
    start_controllers, templates_ready, two_members_under_a_divided_policy,
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
/// them from), counting their requests in `counts` under "member: ".
async fn fresh_member_clients(
    cp: &ControlPlane,
    members: [&Member; 2],
    counts: &Counts,
) -> MemberClients {
    let fresh = MemberClients::new(cp.client.clone(), Duration::from_secs(5));
    for member in members {
        fresh
            .pin(
                &member.name,
                counting_client(&member.client, counts, "member"),
            )
            .await;
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
    let fresh_members = fresh_member_clients(&cp, [&member1, &member2], &second).await;
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
        "a restart over a converged federation writes nothing to the control plane or a member: {writes:#?}"
    );
    // The members are watched (one list per kind and member), never read object by object: execution trusts
    // the work status controller's watch for Works applied at their generation.
    let member_gets: BTreeMap<&String, &u64> = after_restart
        .iter()
        .filter(|(key, _)| key.starts_with("member: get"))
        .collect();
    assert!(
        member_gets.is_empty(),
        "no member object is read one by one after a restart: {member_gets:#?}"
    );
    assert!(
        after_restart.contains_key("member: list deployments"),
        "the members' objects are listed by the new watches: {after_restart:#?}"
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

    let counts = Counts::default();
    let fresh_members = fresh_member_clients(&cp, [&member1, &member2], &counts).await;
    let _handles = start_controllers(&cp, &fresh_members, &counts, &cp.cancel);
    for member in [&member1, &member2] {
        eventually(&format!("the edited image in {}", member.name), || async {
            (member_image(member, "web-0").await.as_deref() == Some("nginx:1.28")).then_some(())
        })
        .await;
    }
}

/// Execution trusts the member watch after a restart, so the watch must report what changed in a member while
/// nobody watched: a copy deleted meanwhile is created again, and a copy edited meanwhile is restored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn member_copies_deleted_or_edited_while_the_controllers_were_down_are_restored() {
    let cp = ControlPlane::start().await;
    let (member1, member2) = two_members_under_a_divided_policy(&cp).await;
    let first_run = cp.cancel.child_token();
    let handles = start_controllers(&cp, &cp.members, &Counts::default(), &first_run);
    cp.create("deployments", deployment("web-0")).await;
    for member in [&member1, &member2] {
        eventually(&format!("web-0 in {}", member.name), || async {
            (member_image(member, "web-0").await.as_deref() == Some("nginx:1.27")).then_some(())
        })
        .await;
    }
    // Applied is recorded before the controllers stop, so the restarted execution has it to trust.
    eventually("web-0's Works report Applied", || async {
        let works = Api::<DynamicObject>::all_with(
            cp.client.clone(),
            &resource("work.karmada.io", "v1alpha1", "Work", "works"),
        )
        .list(&ListParams::default())
        .await
        .ok()?;
        let applied = works.items.iter().all(|work| {
            work.data
                .pointer("/status/conditions")
                .and_then(|c| c.as_array())
                .is_some_and(|c| {
                    c.iter()
                        .any(|c| c["type"] == "Applied" && c["status"] == "True")
                })
        });
        (works.items.len() == 2 && applied).then_some(())
    })
    .await;
    stop(&first_run, handles).await;

    deployments(&member1.client)
        .delete("web-0", &Default::default())
        .await
        .expect("delete member1's copy");
    deployments(&member2.client)
        .patch(
            "web-0",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"template": {"spec": {"containers": [
                {"name": "main", "image": "nginx:0.1"}]}}}})),
        )
        .await
        .expect("edit member2's copy");

    let counts = Counts::default();
    let fresh_members = fresh_member_clients(&cp, [&member1, &member2], &counts).await;
    let _handles = start_controllers(&cp, &fresh_members, &counts, &cp.cancel);
    for member in [&member1, &member2] {
        eventually(&format!("web-0 restored in {}", member.name), || async {
            (member_image(member, "web-0").await.as_deref() == Some("nginx:1.27")).then_some(())
        })
        .await;
    }
}
