//! With `--volatile-events`, Events live apart from durable state (`store::split`): kubectl lists and watches
//! them as before, they expire `--event-ttl` after their last write, and a restart forgets them while every
//! other object stays. By default they are kept in the store.

use std::time::Duration;

use crate::harness::{Server, wait_within};

/// An Event about the ConfigMap `kept` (whose uid `kubectl describe` matches on).
fn event(name: &str, uid: &str) -> String {
    format!(
        "apiVersion: v1
kind: Event
metadata:
  name: {name}
  namespace: default
involvedObject:
  apiVersion: v1
  kind: ConfigMap
  name: kept
  namespace: default
  uid: {uid}
reason: Tested
message: an event named {name}
type: Normal
count: 1
"
    )
}

fn create(server: &Server, manifest: &str) {
    server
        .kubectl_stdin(&["create", "-f", "-"], manifest)
        .success();
}

fn event_names(server: &Server) -> Vec<String> {
    let listed = server.kubectl(&["get", "events", "-n", "default", "-o", "json"]);
    listed.json()["items"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|e| e["metadata"]["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn resource_version(server: &Server, args: &[&str]) -> u64 {
    let mut args = args.to_vec();
    args.extend(["-o", "jsonpath={.metadata.resourceVersion}"]);
    let out = server.kubectl(&args);
    out.success()
        .trim()
        .parse()
        .unwrap_or_else(|e| panic!("resourceVersion of {args:?}: {e}"))
}

fn config_map_uid(server: &Server) -> String {
    server
        .kubectl(&[
            "get",
            "configmap",
            "kept",
            "-n",
            "default",
            "-o",
            "jsonpath={.metadata.uid}",
        ])
        .success()
        .trim()
        .to_string()
}

const CONFIG_MAP: &str = "apiVersion: v1
kind: ConfigMap
metadata:
  name: kept
  namespace: default
data:
  k: v
";

#[test]
fn events_are_served_but_not_kept_across_a_restart() {
    let mut server = Server::start_with(&["--volatile-events"]);
    create(&server, CONFIG_MAP);
    let uid = config_map_uid(&server);
    create(&server, &event("first", &uid));
    assert_eq!(event_names(&server), ["first"]);
    let described = server.kubectl(&["describe", "configmap", "kept", "-n", "default"]);
    assert!(
        described.success().contains("an event named first"),
        "describe shows the Event"
    );
    // A watch from the list's resourceVersion sees the next Event.
    let listed = server.kubectl(&["get", "events", "-n", "default", "-o", "json"]);
    let list_version = listed.json()["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let watched = server.kubectl_spawn(&[
        "get",
        "--raw",
        &format!(
            "/api/v1/namespaces/default/events?watch=true&resourceVersion={list_version}&timeoutSeconds=10"
        ),
    ]);
    create(&server, &event("second", &uid));
    let output = watched.wait_with_output().expect("watch output");
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        text.contains("\"ADDED\"")
            && text.contains("\"name\":\"second\"")
            && !text.contains("\"name\":\"first\""),
        "the watch from the list's version sees only the new Event: {text}"
    );

    server.kill_and_restart();
    assert_eq!(
        server
            .kubectl(&[
                "get",
                "configmap",
                "kept",
                "-n",
                "default",
                "-o",
                "jsonpath={.data.k}"
            ])
            .success(),
        "v",
        "durable objects survive the restart"
    );
    assert!(event_names(&server).is_empty(), "Events do not");
    let config_map_version =
        resource_version(&server, &["get", "configmap", "kept", "-n", "default"]);
    create(&server, &event("third", &uid));
    let event_version = resource_version(&server, &["get", "event", "third", "-n", "default"]);
    assert!(
        event_version > config_map_version,
        "Event resourceVersions continue above the durable store's ({event_version} vs {config_map_version})"
    );
    // An Event resourceVersion from before the restart is expired, not waited for.
    let expired = server.kubectl(&[
        "get",
        "--raw",
        &format!("/api/v1/namespaces/default/events?watch=true&resourceVersion={list_version}&timeoutSeconds=5"),
    ]);
    assert!(
        expired.failure().contains("Expired"),
        "a watch from before the restart is told to relist (410 Expired): {}",
        expired.stderr
    );
}

#[test]
fn events_expire_after_their_ttl() {
    let server = Server::start_with(&["--volatile-events", "--event-ttl", "2s"]);
    create(&server, CONFIG_MAP);
    create(&server, &event("short-lived", &config_map_uid(&server)));
    assert_eq!(event_names(&server), ["short-lived"]);
    wait_within(Duration::from_secs(60), "the Event to expire", || {
        let names = event_names(&server);
        if names.is_empty() {
            Ok(())
        } else {
            Err(format!("still listed: {names:?}"))
        }
    });
    assert_eq!(
        server
            .kubectl(&["get", "configmap", "kept", "-n", "default", "-o", "name"])
            .success()
            .trim(),
        "configmap/kept",
        "only Events expire"
    );
}

#[test]
fn events_survive_a_restart_by_default() {
    let mut server = Server::start();
    create(&server, CONFIG_MAP);
    create(&server, &event("kept-event", &config_map_uid(&server)));
    server.kill_and_restart();
    assert_eq!(event_names(&server), ["kept-event"]);
}

#[test]
fn a_bad_event_ttl_is_refused_with_the_accepted_form() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_karmada"))
        .args([
            "apiserver",
            "--data-dir",
            "never-created",
            "--event-ttl",
            "soon",
        ])
        .output()
        .expect("run karmada apiserver");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--event-ttl") && stderr.contains("10s"),
        "the error names the flag and shows the accepted form: {stderr}"
    );
}
