//! The dashboard in a real browser (issue 38): Debian's chromium, headless, driven through chromedriver by
//! fantoccini (WebDriver). A control plane with three member-sims, `karmada dashboard` against it, and the
//! checks a person would make: log in, see the clusters, read a Divided workload's placement and the
//! scheduler's scores, watch a frozen member turn NotReady without reload, be refused by RBAC (cordon, taint,
//! promote), be refused a wrong token, see an expired token and a deleted ServiceAccount end the session, see a
//! deleted object's page say so, taint and untaint a cluster, promote a member's object, read the multi-cluster
//! services with their endpoints per cluster, the override policies with where they applied, and an
//! eviction-budget window on the failover timeline.
//! Screenshots of each view go to `target/<profile>/dashboard-screenshots/` (not committed).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::json;

use test_fixtures::free_port;

use crate::harness::{Owned, bin, spawn_logged};
use crate::plane::{Plane, wait_for};

const DEADLINE: Duration = Duration::from_secs(60);

/// Polls an async check until it is `Ok`, failing with the last observation after [`DEADLINE`].
macro_rules! eventually {
    ($what:expr, $check:expr) => {{
        let deadline = Instant::now() + DEADLINE;
        loop {
            let result: Result<_, String> = $check.await;
            match result {
                Ok(value) => break value,
                Err(last) => {
                    assert!(
                        Instant::now() < deadline,
                        "timed out waiting for {}; last: {last}",
                        $what
                    );
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
    }};
}

/// A program the test needs from `scripts/setup.sh`; its absence fails the test, saying so.
fn required(program: &str) -> PathBuf {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(program))
            .find(|path| path.is_file())
    });
    found.unwrap_or_else(|| panic!("{program} is not installed: run scripts/setup.sh (it installs chromium and chromium-driver)"))
}

fn screenshots_dir() -> PathBuf {
    let dir = bin("karmada")
        .parent()
        .expect("target dir")
        .join("dashboard-screenshots");
    std::fs::create_dir_all(&dir).expect("screenshots dir");
    dir
}

async fn screenshot(browser: &Client, name: &str) {
    let png = browser.screenshot().await.expect("screenshot");
    std::fs::write(screenshots_dir().join(format!("{name}.png")), png).expect("write screenshot");
}

/// The texts of the elements `css` selects now.
async fn texts(browser: &Client, css: &str) -> Result<Vec<String>, String> {
    let elements = browser
        .find_all(Locator::Css(css))
        .await
        .map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for element in elements {
        out.push(element.text().await.map_err(|e| e.to_string())?);
    }
    Ok(out)
}

/// The text of the one element `css` selects, once there is one.
async fn text_of(browser: &Client, css: &str) -> String {
    eventually!(format!("an element {css}"), async {
        texts(browser, css)
            .await?
            .into_iter()
            .next()
            .ok_or_else(|| "absent".to_string())
    })
}

async fn login(browser: &Client, base: &str, token: &str) {
    browser
        .goto(&format!("{base}login"))
        .await
        .expect("login page");
    let field = browser
        .find(Locator::Css("#token"))
        .await
        .expect("token field");
    field.send_keys(token).await.expect("type token");
    browser
        .find(Locator::Css("#login"))
        .await
        .expect("button")
        .click()
        .await
        .expect("submit");
}

async fn logout(browser: &Client) {
    browser
        .find(Locator::Css("#logout"))
        .await
        .expect("logout")
        .click()
        .await
        .expect("click");
    text_of(browser, "#login").await;
}

/// Clicks `css` once the page shows it: after a form is submitted the next page may still be loading (the
/// old page's element may also go stale under the click), so both are retried until the deadline.
async fn click(browser: &Client, css: &str) {
    eventually!(format!("a clickable {css}"), async {
        let element = browser
            .find(Locator::Css(css))
            .await
            .map_err(|e| e.to_string())?;
        element.click().await.map_err(|e| e.to_string())
    });
}

/// Types `text` into `css` once the page shows it (see [`click`]).
async fn fill(browser: &Client, css: &str, text: &str) {
    eventually!(format!("a field {css}"), async {
        let field = browser
            .find(Locator::Css(css))
            .await
            .map_err(|e| e.to_string())?;
        field.clear().await.map_err(|e| e.to_string())?;
        field.send_keys(text).await.map_err(|e| e.to_string())
    });
}

/// Opens `path`, reads the confirmation question, confirms, and returns (question, the result or error text).
async fn confirm_at(browser: &Client, base: &str, path: &str) -> (String, String) {
    browser
        .goto(&format!("{base}{path}"))
        .await
        .expect("confirm page");
    let question = text_of(browser, "#question").await;
    click(browser, "#confirm").await;
    let outcome = text_of(browser, "#action-result, #action-error").await;
    (question, outcome)
}

/// A bootstrap token (`kube-system/bootstrap-token-<id>`) in group `system:bootstrappers:dashboard`, which may
/// read everything; its expiration can be moved into the past to expire it.
fn bootstrap_token(plane: &Plane, id: &str, secret: &str) -> String {
    let expires = jiff::Timestamp::now()
        .checked_add(jiff::SignedDuration::from_hours(1))
        .expect("time")
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string();
    let manifest = json!({"apiVersion": "v1", "kind": "Secret", "type": "bootstrap.kubernetes.io/token",
        "metadata": {"name": format!("bootstrap-token-{id}"), "namespace": "kube-system"},
        "stringData": {"token-id": id, "token-secret": secret, "expiration": expires,
            "usage-bootstrap-authentication": "true", "auth-extra-groups": "system:bootstrappers:dashboard"}});
    plane.apply(&format!("bootstrap-token-{id}"), &manifest.to_string());
    plane
        .kubectl(&[
            "create",
            "clusterrolebinding",
            "dashboard-bootstrappers",
            "--clusterrole=read-everything",
            "--group=system:bootstrappers:dashboard",
        ])
        .success();
    format!("{id}.{secret}")
}

fn expire_bootstrap_token(plane: &Plane, id: &str) {
    let patch = json!({"stringData": {"expiration": "2020-01-01T00:00:00Z"}}).to_string();
    plane
        .kubectl(&[
            "patch",
            "secret",
            &format!("bootstrap-token-{id}"),
            "-n",
            "kube-system",
            "--type=merge",
            "-p",
            &patch,
        ])
        .success();
}

/// The Deployment `web` exported from every member and imported in the control plane: a Service, a
/// ServiceExport and a policy sending both to the three members, and a ServiceImport; and offered by a
/// MultiClusterService from two members to the third.
fn export_web(plane: &Plane) {
    let service = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "default"},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 80, "protocol": "TCP"}]}});
    let export = json!({"apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "ServiceExport",
        "metadata": {"name": "web", "namespace": "default"}});
    let import = json!({"apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "ServiceImport",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"type": "ClusterSetIP", "ports": [{"port": 80, "protocol": "TCP"}]}});
    let policy = json!({"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
        "metadata": {"name": "web-export", "namespace": "default"},
        "spec": {"resourceSelectors": [
                    {"apiVersion": "v1", "kind": "Service", "name": "web"},
                    {"apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "ServiceExport", "name": "web"}],
                 "placement": {"clusterAffinity": {"clusterNames": ["member1", "member2", "member3"]}}}});
    // The same pods offered across clusters by a MultiClusterService: member1 and member2 provide, member3
    // consumes.
    let cross = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web-cross", "namespace": "default"},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 80, "protocol": "TCP"}]}});
    let mcs = json!({"apiVersion": "networking.karmada.io/v1alpha1", "kind": "MultiClusterService",
        "metadata": {"name": "web-cross", "namespace": "default"},
        "spec": {"types": ["CrossCluster"], "providerClusters": [{"name": "member1"}, {"name": "member2"}],
                 "consumerClusters": [{"name": "member3"}]}});
    for (name, manifest) in [
        ("web-cross", cross),
        ("web-cross-mcs", mcs),
        ("web-service", service),
        ("web-export", export),
        ("web-import", import),
        ("web-export-policy", policy),
    ] {
        plane.apply(name, &manifest.to_string());
    }
}

/// Marks the current document; a reload drops the mark.
async fn mark_document(browser: &Client) {
    browser
        .execute("window.__notReloaded = true;", vec![])
        .await
        .expect("mark");
}

async fn still_same_document(browser: &Client) -> bool {
    browser
        .execute("return window.__notReloaded === true;", vec![])
        .await
        .expect("read mark")
        .as_bool()
        .unwrap_or(false)
}

fn token(plane: &Plane, account: &str) -> String {
    plane
        .kubectl(&["create", "token", account, "--duration=1h"])
        .success()
        .trim()
        .to_string()
}

fn setup_accounts_and_workloads(plane: &Plane) {
    plane
        .kubectl(&["create", "serviceaccount", "admin-bot"])
        .success();
    plane
        .kubectl(&[
            "create",
            "clusterrolebinding",
            "admin-bot",
            "--clusterrole=cluster-admin",
            "--serviceaccount=default:admin-bot",
        ])
        .success();
    plane
        .kubectl(&["create", "serviceaccount", "reader"])
        .success();
    let reader = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "read-everything"},
        "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["get", "list", "watch"]}]});
    plane.apply("read-everything", &reader.to_string());
    plane
        .kubectl(&[
            "create",
            "clusterrolebinding",
            "reader",
            "--clusterrole=read-everything",
            "--serviceaccount=default:reader",
        ])
        .success();
    for (name, replicas) in [("web", "6"), ("doomed", "3")] {
        plane
            .kubectl(&[
                "create",
                "deployment",
                name,
                "--image",
                "nginx:1.27",
                "--replicas",
                replicas,
            ])
            .success();
    }
    let weight = |cluster: &str, weight: u32| json!({"targetCluster": {"clusterNames": [cluster]}, "weight": weight});
    let policy = json!({"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"resourceSelectors": [
                    {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                    {"apiVersion": "apps/v1", "kind": "Deployment", "name": "doomed"}],
                 "placement": {"clusterAffinity": {"clusterNames": ["member1", "member2", "member3"]},
                    "replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
                        "weightPreference": {"staticWeightList": [weight("member1", 1), weight("member2", 2), weight("member3", 3)]}}}}});
    plane.apply("web-policy", &policy.to_string());
    for binding in ["web-deployment", "doomed-deployment"] {
        wait_for(&format!("{binding} placed on three clusters"), || {
            let rb =
                plane.object(&["resourcebindings.work.karmada.io", "-n", "default", binding])?;
            let placed = rb["spec"]["clusters"].as_array().map_or(0, Vec::len);
            (placed == 3)
                .then_some(())
                .ok_or(format!("{}", rb["spec"]["clusters"]))
        });
    }
}

fn start_dashboard(plane: &Plane) -> (Owned, String) {
    start_dashboard_for(&plane.karmada.kubeconfig, plane.karmada.dir.path())
}

/// `karmada dashboard` for the control plane of `kubeconfig`, its address file and log in `dir`; returns the
/// process and the URL it serves.
fn start_dashboard_for(kubeconfig: &std::path::Path, dir: &std::path::Path) -> (Owned, String) {
    let address_file = dir.join("dashboard.url");
    let process = spawn_logged(
        &bin("karmada"),
        &[
            "dashboard",
            "--kubeconfig",
            kubeconfig.to_str().expect("utf-8"),
            "--bind",
            "127.0.0.1:0",
            "--address-file",
            address_file.to_str().expect("utf-8"),
            "--exit-with-stdin",
        ],
        &dir.join("dashboard.log"),
    );
    let url = wait_for("the dashboard's address", || {
        std::fs::read_to_string(&address_file)
            .map_err(|e| e.to_string())
            .and_then(|u| {
                if u.starts_with("https://") {
                    Ok(u)
                } else {
                    Err(u)
                }
            })
    });
    (process, url)
}

/// chromedriver and the browser it starts, in a process group of their own, all killed on drop: killing
/// chromedriver alone would leave chromium running when a test fails before closing its session.
struct Driver(std::process::Child);

impl Drop for Driver {
    fn drop(&mut self) {
        let group = format!("-{}", self.0.id());
        let _ = std::process::Command::new("kill")
            .args(["-KILL", "--", &group])
            .status();
        let _ = self.0.wait();
    }
}

async fn browser(
    chromedriver: &std::path::Path,
    chromium: &std::path::Path,
    log: &std::path::Path,
) -> (Driver, Client) {
    let port = free_port();
    let log = std::fs::File::create(log).expect("chromedriver log");
    let mut command = std::process::Command::new(chromedriver);
    command
        .arg(format!("--port={port}"))
        .stdout(log.try_clone().expect("log"))
        .stderr(log);
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let driver = Driver(command.spawn().expect("start chromedriver"));
    let mut capabilities = serde_json::Map::new();
    capabilities.insert("acceptInsecureCerts".into(), json!(true));
    capabilities.insert(
        "goog:chromeOptions".into(),
        json!({"binary": chromium, "args": ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
               "--disable-gpu", "--disable-crash-reporter", "--disable-breakpad", "--window-size=1280,800"]}),
    );
    let connector = hyper_util::client::legacy::connect::HttpConnector::new();
    let client = eventually!("chromedriver to start a session", async {
        ClientBuilder::new(connector.clone())
            .capabilities(capabilities.clone())
            .connect(&format!("http://127.0.0.1:{port}"))
            .await
            .map_err(|e| e.to_string())
    });
    (driver, client)
}

#[test]
fn dashboard_in_headless_chromium() {
    let chromedriver = required("chromedriver");
    let chromium = required("chromium");
    let plane = Plane::start(&["member1", "member2", "member3"]);
    setup_accounts_and_workloads(&plane);
    let (_dashboard, base) = start_dashboard(&plane);
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let (_driver, browser) = browser(
            &chromedriver,
            &chromium,
            &plane.karmada.dir.path().join("chromedriver.log"),
        )
        .await;

        // A wrong token is refused at login.
        login(&browser, &base, "not-a-token").await;
        let refused = text_of(&browser, "#login-error").await;
        assert!(refused.contains("401 Unauthorized"), "{refused}");
        screenshot(&browser, "login-refused").await;

        // A read-only user sees the clusters but RBAC refuses the cordon, with the API's message.
        login(&browser, &base, &token(&plane, "reader")).await;
        assert_eq!(
            text_of(&browser, "#user").await,
            "system:serviceaccount:default:reader"
        );
        browser
            .goto(&format!("{base}clusters/member1/cordon?action=cordon"))
            .await
            .expect("confirm page");
        text_of(&browser, "#question").await;
        browser
            .find(Locator::Css("#confirm"))
            .await
            .expect("confirm")
            .click()
            .await
            .expect("click");
        let denied = text_of(&browser, "#action-error").await;
        assert!(
            denied.contains("cannot update resource \"clusters\""),
            "{denied}"
        );
        screenshot(&browser, "cordon-forbidden").await;
        let (question, denied) = confirm_at(
            &browser,
            &base,
            "clusters/member1/taint?spec=dedicated%3Dgpu%3ANoSchedule",
        )
        .await;
        assert!(
            question.starts_with("Taint cluster member1 with dedicated=gpu:NoSchedule?"),
            "{question}"
        );
        assert!(
            denied.contains("cannot update resource \"clusters\""),
            "{denied}"
        );
        plane
            .member_kubectl("member1", &["create", "configmap", "promoted-cm", "--from-literal=k=v"])
            .success();
        let (question, denied) = confirm_at(
            &browser,
            &base,
            "promote?confirm=1&cluster=member1&apiVersion=v1&kind=ConfigMap&namespace=default&name=promoted-cm",
        )
        .await;
        assert!(
            question.starts_with("Promote ConfigMap default/promoted-cm from cluster member1?"),
            "{question}"
        );
        assert!(
            denied.contains("cannot create resource \"configmaps\""),
            "{denied}"
        );
        screenshot(&browser, "promote-forbidden").await;
        logout(&browser).await;

        // An expired token: the session it opened ends, with a page saying so.
        let bootstrap = bootstrap_token(&plane, "dash01", "0123456789abcdef");
        login(&browser, &base, &bootstrap).await;
        assert_eq!(
            text_of(&browser, "#user").await,
            "system:bootstrap:dash01"
        );
        text_of(&browser, "#clusters").await;
        expire_bootstrap_token(&plane, "dash01");
        browser.goto(&base).await.expect("overview");
        let notice = text_of(&browser, "#notice").await;
        assert!(
            notice.contains("session ended") && notice.contains("expired token"),
            "{notice}"
        );
        screenshot(&browser, "session-expired").await;

        // The administrator: three Ready clusters.
        login(&browser, &base, &token(&plane, "admin-bot")).await;
        let ready = eventually!("three Ready clusters", async {
            let ready = texts(&browser, "#clusters span.ready").await?;
            (ready.len() == 3 && ready.iter().all(|r| r == "Ready"))
                .then_some(ready.clone())
                .ok_or(format!("{ready:?}"))
        });
        assert_eq!(ready.len(), 3);
        screenshot(&browser, "overview").await;

        // The Divided workload: replicas 1:2:3 per cluster, and the scheduler's score for each.
        browser
            .goto(&format!("{base}workloads/default/web-deployment"))
            .await
            .expect("workload");
        let replicas = eventually!("the placement table", async {
            let mut cells = Vec::new();
            for cluster in ["member1", "member2", "member3"] {
                let css = format!("#placement span.replicas[data-cluster=\"{cluster}\"]");
                cells.push(texts(&browser, &css).await?.join(""));
            }
            (cells.iter().all(|c| !c.is_empty()))
                .then_some(cells.clone())
                .ok_or(format!("{cells:?}"))
        });
        assert_eq!(replicas, ["1", "2", "3"]);
        let scores = texts(&browser, "#scores span.score").await.expect("scores");
        assert_eq!(scores.len(), 3, "{scores:?}");
        assert!(
            scores.iter().all(|s| s.parse::<i64>().is_ok()),
            "every cluster has a numeric score: {scores:?}"
        );
        let verdicts = texts(&browser, "#scores tbody tr td:nth-child(2)")
            .await
            .expect("verdicts");
        assert!(verdicts.iter().all(|v| v == "feasible"), "{verdicts:?}");
        screenshot(&browser, "workload").await;

        browser
            .goto(&format!("{base}policies"))
            .await
            .expect("policies");
        let claims = text_of(&browser, "#policies tbody").await;
        assert!(
            claims.contains("Deployment/web") && claims.contains("Deployment/doomed"),
            "{claims}"
        );
        screenshot(&browser, "policies").await;

        // Multi-cluster services: the import of `web` backed by each member's endpoints (1, 2 and 3 pods),
        // arriving on the open page as the controllers import the slices.
        browser
            .goto(&format!("{base}services"))
            .await
            .expect("services");
        text_of(&browser, "#service-imports").await;
        mark_document(&browser).await;
        export_web(&plane);
        let backing = eventually!("web's endpoints from the three members", async {
            let cells = texts(&browser, "#service-imports span.endpoints").await?;
            (cells.len() == 3 && cells.iter().all(|c| !c.ends_with(" 0/0")))
                .then_some(cells.clone())
                .ok_or(format!("{cells:?}"))
        });
        assert_eq!(backing, ["member1 1/1", "member2 2/2", "member3 3/3"]);
        eventually!("web-cross's endpoints from its two providers", async {
            let cells = texts(&browser, "#multicluster-services span.endpoints").await?;
            (cells == ["member1 1/1", "member2 2/2"])
                .then_some(())
                .ok_or(format!("{cells:?}"))
        });
        eventually!("web-cross's endpoints dispatched into member3", async {
            let cells = texts(&browser, "#multicluster-services span.dispatched").await?;
            (cells == ["member3 3/3"]).then_some(()).ok_or(format!("{cells:?}"))
        });
        let mcs_row = text_of(&browser, "#multicluster-services tbody").await;
        assert!(
            mcs_row.contains("default/web-cross") && mcs_row.contains("ServiceApplied=True"),
            "{mcs_row}"
        );
        let exports = text_of(&browser, "#service-exports tbody").await;
        assert!(exports.contains("default/web"), "{exports}");
        assert!(still_same_document(&browser).await, "updated in place");
        screenshot(&browser, "services").await;

        // Override policies: the one for member2's image, the workload it matches and where it applied.
        let override_policy = json!({"apiVersion": "policy.karmada.io/v1alpha1", "kind": "OverridePolicy",
            "metadata": {"name": "web-image", "namespace": "default"},
            "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}],
                     "overrideRules": [{"targetCluster": {"clusterNames": ["member2"]},
                        "overriders": {"imageOverrider": [{"component": "Tag", "operator": "replace", "value": "1.28"}]}}]}});
        plane.apply("web-image", &override_policy.to_string());
        browser
            .goto(&format!("{base}overrides"))
            .await
            .expect("overrides");
        eventually!("web-image applied on member2", async {
            let rows = texts(&browser, "#overrides tbody tr").await?;
            rows.iter()
                .any(|r| {
                    r.contains("default/web-image")
                        && r.contains("member2: imageOverrider")
                        && r.contains("Deployment/web")
                        && r.contains("member2: Deployment default/web")
                })
                .then_some(())
                .ok_or(format!("{rows:?}"))
        });
        screenshot(&browser, "overrides").await;
        // The workload's page names the override applied to its member2 Work, and only there.
        browser
            .goto(&format!("{base}workloads/default/web-deployment"))
            .await
            .expect("workload");
        let works = eventually!("the Works with their overrides", async {
            let rows = texts(&browser, "#works tbody tr").await?;
            (rows.len() == 3).then_some(rows.clone()).ok_or(format!("{rows:?}"))
        });
        for row in &works {
            assert_eq!(
                row.contains("OverridePolicy default/web-image"),
                row.contains("karmada-es-member2"),
                "{works:?}"
            );
        }

        // Promote: the member's ConfigMap becomes a template with karmadactl promote's policy.
        browser
            .goto(&format!("{base}promote"))
            .await
            .expect("promote");
        screenshot(&browser, "promote").await;
        fill(&browser, "#apiVersion", "v1").await;
        fill(&browser, "#kind", "ConfigMap").await;
        fill(&browser, "#namespace", "default").await;
        fill(&browser, "#name", "promoted-cm").await;
        click(&browser, "#promote-next").await;
        let question = text_of(&browser, "#question").await;
        assert!(
            question.starts_with("Promote ConfigMap default/promoted-cm from cluster member1?"),
            "{question}"
        );
        click(&browser, "#confirm").await;
        let promoted = text_of(&browser, "#action-result").await;
        assert!(
            promoted.starts_with("ConfigMap default/promoted-cm promoted from member1"),
            "{promoted}"
        );
        let template = plane
            .object(&["configmap", "promoted-cm"])
            .expect("the template");
        assert_eq!(
            template["metadata"]["annotations"]["work.karmada.io/conflict-resolution"],
            "overwrite"
        );
        let policies = plane
            .kubectl(&["get", "propagationpolicies", "-o", "name"])
            .success()
            .to_string();
        assert!(
            policies.contains("propagationpolicy.policy.karmada.io/promoted-cm-"),
            "{policies}"
        );

        // Taint and untaint through the taint page; the overview shows the taint meanwhile.
        browser
            .goto(&format!("{base}clusters/member1/taint"))
            .await
            .expect("taints");
        fill(&browser, "#spec", "dedicated=gpu:NoSchedule").await;
        click(&browser, "#taint-next").await;
        click(&browser, "#confirm").await;
        assert_eq!(
            text_of(&browser, "#action-result").await,
            "cluster/member1 tainted"
        );
        browser
            .goto(&format!("{base}clusters/member1/taint"))
            .await
            .expect("taints");
        let listed = text_of(&browser, "#taints tbody").await;
        assert!(listed.contains("dedicated=gpu:NoSchedule"), "{listed}");
        screenshot(&browser, "taints").await;
        browser.goto(&base).await.expect("overview");
        let overview = text_of(&browser, "#clusters tbody").await;
        assert!(overview.contains("dedicated=gpu:NoSchedule"), "{overview}");
        let (question, removed) = confirm_at(
            &browser,
            &base,
            "clusters/member1/taint?spec=dedicated%3ANoSchedule-",
        )
        .await;
        assert!(question.starts_with("Remove the taint dedicated:NoSchedule"), "{question}");
        assert_eq!(removed, "cluster/member1 untainted");
        let taints =
            plane.object(&["cluster", "member1"]).expect("member1")["spec"]["taints"].to_string();
        assert!(!taints.contains("dedicated"), "{taints}");

        // A member frozen: NotReady on the overview without reload.
        browser.goto(&base).await.expect("overview");
        text_of(&browser, "#clusters").await;
        mark_document(&browser).await;
        plane.fault("member2", &["unreachable"]);
        eventually!("member2 NotReady on the open overview", async {
            let state = texts(&browser, "#clusters span.ready[data-cluster=\"member2\"]")
                .await?
                .join("");
            (state == "NotReady").then_some(()).ok_or(state)
        });
        assert!(
            still_same_document(&browser).await,
            "the overview was updated in place, not reloaded"
        );
        screenshot(&browser, "overview-member2-notready").await;

        // An eviction-budget window as the failover controllers record it on a Cluster (write-ahead of an
        // eviction): the timeline shows it open.
        let opened = jiff::Timestamp::now().to_string();
        plane
            .kubectl(&[
                "annotate",
                "cluster",
                "member3",
                &format!("failover.karmada.io/eviction-window-start={opened}"),
            ])
            .success();
        browser
            .goto(&format!("{base}failover"))
            .await
            .expect("failover");
        eventually!("member3's budget window on the timeline", async {
            let rows = texts(&browser, "#timeline tbody tr").await?;
            rows.iter()
                .any(|r| {
                    r.contains("EvictionBudgetWindow")
                        && r.contains("cluster/member3")
                        && r.contains("eviction-budget window open")
                })
                .then_some(())
                .ok_or(format!("{rows:?}"))
        });
        // The frozen member's taint is on the timeline (the page is live: it may arrive after the first render).
        eventually!("member2's taint on the failover timeline", async {
            let rows = texts(&browser, "#timeline tbody tr").await?;
            rows.iter()
                .any(|r| {
                    r.contains("cluster/member2") && r.contains("cluster.karmada.io/unreachable")
                })
                .then_some(())
                .ok_or(format!("{rows:?}"))
        });
        screenshot(&browser, "failover").await;

        // Phone width: the page fits, wide tables scroll inside their box.
        browser.set_window_size(390, 844).await.expect("resize");
        browser.goto(&base).await.expect("overview");
        text_of(&browser, "#clusters").await;
        let fits = browser
            .execute(
                "return document.documentElement.scrollWidth <= window.innerWidth + 1;",
                vec![],
            )
            .await
            .expect("measure");
        assert_eq!(
            fits,
            json!(true),
            "no horizontal scroll of the page at phone width"
        );
        screenshot(&browser, "overview-phone").await;
        for view in ["services", "overrides", "failover"] {
            browser
                .goto(&format!("{base}{view}"))
                .await
                .expect("view");
            text_of(&browser, "main table").await;
            let fits = browser
                .execute(
                    "return document.documentElement.scrollWidth <= window.innerWidth + 1;",
                    vec![],
                )
                .await
                .expect("measure");
            assert_eq!(fits, json!(true), "{view} fits the phone width");
        }
        screenshot(&browser, "failover-phone").await;
        browser.set_window_size(1280, 800).await.expect("resize");

        // An object deleted while its page is open: the page says it is gone.
        browser
            .goto(&format!("{base}workloads/default/doomed-deployment"))
            .await
            .expect("workload");
        text_of(&browser, "#placement").await;
        mark_document(&browser).await;
        plane.kubectl(&["delete", "deployment", "doomed"]).success();
        let gone = text_of(&browser, "#gone").await;
        assert!(gone.contains("no longer exists"), "{gone}");
        assert!(still_same_document(&browser).await, "updated in place");
        screenshot(&browser, "workload-deleted").await;

        // The administrator may cordon; the overview shows the taint.
        browser
            .goto(&format!("{base}clusters/member3/cordon?action=cordon"))
            .await
            .expect("confirm");
        browser
            .find(Locator::Css("#confirm"))
            .await
            .expect("confirm")
            .click()
            .await
            .expect("click");
        assert_eq!(
            text_of(&browser, "#action-result").await,
            "cluster/member3 cordoned"
        );
        let taints =
            plane.object(&["cluster", "member3"]).expect("member3")["spec"]["taints"].to_string();
        assert!(
            taints.contains("cluster.karmada.io/unschedulable"),
            "{taints}"
        );

        // Deleting a policy: from its row, through the confirmation, with the administrator's rights.
        browser
            .goto(&format!("{base}policies"))
            .await
            .expect("policies");
        browser
            .find(Locator::Css("#delete-default-web"))
            .await
            .expect("delete link")
            .click()
            .await
            .expect("click");
        let question = text_of(&browser, "#question").await;
        assert!(
            question.contains("PropagationPolicy default/web"),
            "{question}"
        );
        browser
            .find(Locator::Css("#confirm"))
            .await
            .expect("confirm")
            .click()
            .await
            .expect("click");
        assert_eq!(
            text_of(&browser, "#action-result").await,
            "propagationpolicy/web deleted from default"
        );
        wait_for("the policy gone", || {
            let out = plane.kubectl(&["get", "propagationpolicy", "web", "-n", "default"]);
            (!out.ok()).then_some(()).ok_or(out.stdout)
        });

        // The ServiceAccount deleted: the next page ends the session.
        plane
            .kubectl(&["delete", "serviceaccount", "admin-bot"])
            .success();
        browser.goto(&base).await.expect("overview");
        let notice = text_of(&browser, "#notice").await;
        assert!(notice.contains("session ended"), "{notice}");
        screenshot(&browser, "session-ended").await;
        browser.close().await.expect("close");
    });
}

/// `curl -sk` with a cookie jar, returning the body (`-w` appends the status).
fn curl(jar: &std::path::Path, args: &[&str]) -> String {
    let out = std::process::Command::new("curl")
        .args([
            "-sk",
            "-c",
            jar.to_str().expect("utf-8"),
            "-b",
            jar.to_str().expect("utf-8"),
        ])
        .args(args)
        .output()
        .expect("curl (scripts/setup.sh installs it)");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The workload links and the next page's path of an overview page.
fn overview_page(html: &str) -> (Vec<String>, Option<String>) {
    let workloads = html
        .split("class=\"workload\" href=\"/workloads/default/")
        .skip(1)
        .filter_map(|rest| rest.split('"').next().map(str::to_string))
        .collect();
    let next = html
        .split("id=\"next-page\" class=\"button\" href=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .map(|href| href.replace("&amp;", "&"));
    (workloads, next)
}

/// 120 ResourceBindings on an API server alone; a login by pasting the admin kubeconfig (client certificate
/// inline); the overview's replica map comes 50 bindings a page, following the continue tokens to the end.
#[test]
fn dashboard_lists_a_page_at_a_time_after_a_kubeconfig_login() {
    let server = crate::harness::Server::start();
    let items: Vec<serde_json::Value> = (0..120)
        .map(|i| {
            json!({"apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
                "metadata": {"name": format!("w{i:03}-deployment"), "namespace": "default"},
                "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "name": format!("w{i:03}"),
                                      "namespace": "default"},
                         "clusters": [{"name": "member1", "replicas": 1 + i % 3}]}})
        })
        .collect();
    let list = server.file(
        "bindings.json",
        &json!({"apiVersion": "v1", "kind": "List", "items": items}).to_string(),
    );
    server
        .kubectl(&["apply", "-f", list.to_str().expect("utf-8")])
        .success();
    let dir = server.dir.path();
    let (_dashboard, base) = start_dashboard_for(&server.kubeconfig, dir);
    let jar = dir.join("cookies");
    let kubeconfig = format!("kubeconfig@{}", server.kubeconfig.display());
    let login = curl(
        &jar,
        &[
            "-w",
            "%{http_code} %{redirect_url}",
            "--data-urlencode",
            &kubeconfig,
            &format!("{base}login"),
        ],
    );
    assert!(
        login.starts_with("303 ") && login.ends_with(&base),
        "{login}"
    );
    let mut seen = Vec::new();
    let mut path = String::new();
    let mut pages = Vec::new();
    loop {
        let html = curl(
            &jar,
            &[&format!(
                "{}{}",
                base.trim_end_matches('/'),
                if path.is_empty() { "/" } else { &path }
            )],
        );
        assert!(html.contains("id=\"user\">system:admin<"), "{html}");
        let (workloads, next) = overview_page(&html);
        pages.push(workloads.len());
        seen.extend(workloads);
        match next {
            Some(next) => path = next,
            None => break,
        }
    }
    assert_eq!(pages, [50, 50, 20]);
    // A continue link the API server refuses (not one it issued, or expired): the page says the list changed
    // and links to the first page instead of showing the API's error.
    let stale = curl(
        &jar,
        &[&format!(
            "{}/?continue=bm90LWEtdG9rZW4",
            base.trim_end_matches('/')
        )],
    );
    assert!(
        stale.contains("id=\"stale-list\"")
            && stale.contains("id=\"restart-list\" class=\"button\" href=\"/\""),
        "{stale}"
    );
    assert!(!stale.contains("continue key is not valid"), "{stale}");
    let expected: Vec<String> = (0..120).map(|i| format!("w{i:03}-deployment")).collect();
    assert_eq!(seen, expected);
}
