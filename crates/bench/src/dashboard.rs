//! Dashboard benchmark: first paint of the overview (clusters and the first page of the workload × cluster
//! replica map) with 10,000 ResourceBindings in the control plane, in Debian's headless chromium driven
//! through chromedriver. The dashboard reads one page of bindings per view, so the figure should not grow
//! with the number of workloads.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use fantoccini::{Client, ClientBuilder};
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, PostParams};
use serde_json::{Value, json};
use tokio::sync::Mutex;

use crate::process::{self, Launcher, LogDir};
use crate::report::{self, Row};
use crate::stats::{Samples, ms};

#[derive(clap::Args)]
pub struct Args {
    #[arg(long, default_value_t = 10_000)]
    pub workloads: usize,
    /// Page loads measured (after one warm-up load).
    #[arg(long, default_value_t = 20)]
    pub loads: usize,
    #[arg(long)]
    pub karmada_binary: Option<PathBuf>,
    #[arg(long, default_value = "docs/benchmarks.md")]
    pub report: PathBuf,
}

const MEMBERS: [&str; 3] = ["member1", "member2", "member3"];

fn binding(i: usize) -> anyhow::Result<DynamicObject> {
    let name = format!("app-{i:05}");
    let clusters: Vec<Value> = MEMBERS
        .iter()
        .enumerate()
        .map(|(m, member)| json!({"name": member, "replicas": 1 + (i + m) % 3}))
        .collect();
    Ok(serde_json::from_value(json!({
        "apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
        "metadata": {"name": format!("{name}-deployment"), "namespace": "default"},
        "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name, "namespace": "default"},
                 "replicas": 6, "clusters": clusters}
    }))?)
}

async fn create_bindings(client: &kube::Client, count: usize) -> anyhow::Result<()> {
    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(
        "work.karmada.io",
        "v1alpha2",
        "ResourceBinding",
    ));
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &resource);
    let queue = Arc::new(Mutex::new((0..count).collect::<Vec<_>>()));
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..32 {
        let (api, queue) = (api.clone(), queue.clone());
        tasks.spawn(async move {
            loop {
                let Some(i) = queue.lock().await.pop() else {
                    return anyhow::Ok(());
                };
                api.create(&PostParams::default(), &binding(i)?).await?;
            }
        });
    }
    while let Some(result) = tasks.join_next().await {
        result??;
    }
    Ok(())
}

fn on_path(program: &str) -> anyhow::Result<PathBuf> {
    std::env::var_os("PATH")
        .and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|d| d.join(program))
                .find(|p| p.is_file())
        })
        .with_context(|| format!("{program} is not installed: run scripts/setup.sh"))
}

async fn browser(port: u16) -> anyhow::Result<Client> {
    let mut capabilities = serde_json::Map::new();
    capabilities.insert("acceptInsecureCerts".into(), json!(true));
    capabilities.insert(
        "goog:chromeOptions".into(),
        json!({"binary": on_path("chromium")?, "args": ["--headless=new", "--no-sandbox",
               "--disable-dev-shm-usage", "--disable-gpu", "--disable-crash-reporter", "--disable-breakpad",
               "--window-size=1280,800"]}),
    );
    let connector = hyper_util::client::legacy::connect::HttpConnector::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match ClientBuilder::new(connector.clone())
            .capabilities(capabilities.clone())
            .connect(&format!("http://127.0.0.1:{port}"))
            .await
        {
            Ok(client) => return Ok(client),
            Err(e) if Instant::now() > deadline => return Err(e).context("chromedriver session"),
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

/// First contentful paint and the document's response end of the current page, in ms from navigation start.
async fn paint_timings(browser: &Client) -> anyhow::Result<(f64, f64)> {
    let script = "const paint = performance.getEntriesByName('first-contentful-paint')[0];
                  const nav = performance.getEntriesByType('navigation')[0];
                  return [paint ? paint.startTime : -1, nav.responseEnd];";
    // The entry is recorded with the first frame, which may come after the load event the navigation waits
    // for: read until it is there (the value is the browser's timestamp, not when it was read).
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let value = browser.execute(script, vec![]).await?;
        let read = |i: usize| value[i].as_f64().unwrap_or(-1.0);
        if read(0) >= 0.0 {
            return Ok((read(0), read(1)));
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "no first-contentful-paint entry: {value}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

pub async fn run(args: Args) -> anyhow::Result<()> {
    let logs = LogDir::from_env()?;
    let launcher = Launcher::new(
        &process::karmada_binary(args.karmada_binary.as_ref())?,
        logs.path(),
        &process::bench_log_level(),
    );
    let data = tempfile::tempdir()?;
    let apiserver =
        process::start_apiserver(&launcher, data.path().join("data"), Duration::from_secs(60))
            .await?;
    let started = Instant::now();
    create_bindings(&apiserver.client, args.workloads).await?;
    let create_secs = started.elapsed().as_secs_f64();

    let address_file = data.path().join("dashboard.url");
    let kubeconfig = apiserver.kubeconfig.to_string_lossy().to_string();
    let _dashboard = launcher.spawn(
        "dashboard",
        &[
            "dashboard",
            "--kubeconfig",
            &kubeconfig,
            "--bind",
            "127.0.0.1:0",
            "--address-file",
            &address_file.to_string_lossy(),
            "--exit-with-stdin",
        ],
    )?;
    process::wait_for_file(&address_file, "karmada dashboard", Duration::from_secs(30)).await?;
    let base = std::fs::read_to_string(&address_file)?;

    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let driver_log = std::fs::File::create(logs.path().join("chromedriver.log"))?;
    let mut command = std::process::Command::new(on_path("chromedriver")?);
    command
        .arg(format!("--port={port}"))
        .stdout(driver_log.try_clone()?)
        .stderr(driver_log);
    // Its own process group: the browser it starts goes with it, whatever state the session is in.
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let mut driver = command.spawn()?;
    let result = measure(&base, &apiserver.kubeconfig, port, args.loads.max(1)).await;
    let group = format!("-{}", driver.id());
    let _ = std::process::Command::new("kill")
        .args(["-KILL", "--", &group])
        .status();
    let _ = driver.wait();
    let (paint, response) = result?;

    let rows = vec![Row {
        name: format!(
            "overview first paint, {} bindings (first page of 50)",
            args.workloads
        ),
        ops_per_sec: None,
        p50_ms: Some(ms(paint.quantile(0.5))),
        p99_ms: Some(ms(paint.quantile(0.99))),
        target: "≤ 1 s".into(),
        note: format!(
            "document received (responseEnd) p50 {} ms, p99 {} ms; {} loads; {} bindings created in {create_secs:.1} s",
            ms(response.quantile(0.5)),
            ms(response.quantile(0.99)),
            paint.len(),
            args.workloads
        ),
    }];
    let table = report::render(&rows);
    println!("{table}");
    let body = format!(
        "Command: `cargo run --release -p bench -- dashboard`\n\n\
         Machine: {}. Date: {}. Load average at the end: {}. A `karmada apiserver` holding {} ResourceBindings \
         (3 clusters each), `karmada dashboard` against it, and Debian's headless chromium (through chromedriver) \
         logged in with the admin kubeconfig, loading the overview {} times after one warm-up: p50/p99 of the \
         first contentful paint from navigation start (the page's HTML carries the clusters and the first 50 \
         bindings, read with `limit`/`continue`). Build: {}.\n\n{table}",
        report::machine(),
        jiff::Zoned::now().strftime("%Y-%m-%d %H:%M %Z"),
        report::load_average(),
        args.workloads,
        args.loads,
        if cfg!(debug_assertions) {
            "debug profile — a release build is faster"
        } else {
            "release"
        },
    );
    report::write_section(&args.report, "Dashboard first paint", &body)?;
    println!("wrote {}", report::relative_to_cwd(&args.report));
    Ok(())
}

async fn measure(
    base: &str,
    kubeconfig: &std::path::Path,
    port: u16,
    loads: usize,
) -> anyhow::Result<(Samples, Samples)> {
    let browser = browser(port).await?;
    browser.goto(&format!("{base}login")).await?;
    let config = std::fs::read_to_string(kubeconfig)?;
    browser
        .execute(
            "document.getElementById('kubeconfig').value = arguments[0]; document.querySelector('form.login').submit();",
            vec![json!(config)],
        )
        .await?;
    let deadline = Instant::now() + Duration::from_secs(30);
    while browser
        .find(fantoccini::Locator::Css("#replica-map"))
        .await
        .is_err()
    {
        anyhow::ensure!(
            Instant::now() < deadline,
            "the overview did not show after login"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (mut paint, mut response) = (Samples::default(), Samples::default());
    for load in 0..=loads {
        browser.goto(base).await?;
        let rows = browser
            .find_all(fantoccini::Locator::Css("#replica-map tbody tr"))
            .await?
            .len();
        anyhow::ensure!(
            rows == 50,
            "the overview shows {rows} workloads, not a page of 50"
        );
        let (fcp, end) = paint_timings(&browser).await?;
        if load > 0 {
            paint.push(Duration::from_secs_f64(fcp / 1000.0));
            response.push(Duration::from_secs_f64(end / 1000.0));
        }
    }
    browser.close().await?;
    Ok((paint, response))
}
