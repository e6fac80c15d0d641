//! `serve` end to end over loopback: TLS with and without client certificates, bearer tokens,
//! HTTP/1.1 and HTTP/2, plain-HTTP test mode, streaming, and graceful shutdown.

// Tests may run long (a scenario reads top to bottom); product functions may not (workspace lints).
#![cfg_attr(test, allow(clippy::too_many_lines))]

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use apiserver_auth::UserInfo;
use apiserver_auth::authn::{Authenticator, StaticTokens};
use apiserver_auth::pki::Pki;
use axum::body::Body;
use axum::routing::get;
use axum::{Extension, Router};
use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::{TokioExecutor, TokioIo};
use karmada_apiserver::serve::{ServeOptions, serve_with_options};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use serde_json::{Value, json};
use store::Store;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, mpsc};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

const WAIT: Duration = Duration::from_secs(20);

/// Signals between the test and the routes that block on purpose.
#[derive(Clone, Default)]
struct Gates {
    release: Arc<Notify>,
    started: Option<mpsc::Sender<()>>,
}

fn router(gates: Gates) -> Router {
    let slow = gates.clone();
    let stream = gates;
    Router::new()
        .route(
            "/whoami",
            get(|Extension(user): Extension<UserInfo>| async move {
                let body = json!({"name": user.name, "groups": user.groups}).to_string();
                ([(http::header::CONTENT_TYPE, "application/json")], body)
            }),
        )
        .route(
            "/slow",
            get(move || async move {
                if let Some(started) = &slow.started {
                    let _ = started.send(()).await;
                }
                slow.release.notified().await;
                "finished"
            }),
        )
        .route(
            "/stream",
            get(move || async move {
                let release = stream.release.clone();
                let first = futures::stream::once(async {
                    Ok::<_, std::io::Error>(Bytes::from("first\n"))
                });
                let second = futures::stream::once(async move {
                    release.notified().await;
                    Ok(Bytes::from("second\n"))
                });
                Body::from_stream(futures::StreamExt::chain(first, second))
            }),
        )
}

struct Server {
    addr: std::net::SocketAddr,
    cancel: CancellationToken,
    task: JoinHandle<Result<(), karmada_apiserver::serve::ServeError>>,
}

impl Server {
    async fn start(pki: Option<&Pki>, gates: Gates) -> Result<Server> {
        Self::start_with(pki, gates, ServeOptions::default()).await
    }

    async fn start_with(pki: Option<&Pki>, gates: Gates, options: ServeOptions) -> Result<Server> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let tls = match pki {
            Some(pki) => Some(apiserver_auth::tls::server_config(pki)?),
            None => None,
        };
        let mut tokens = StaticTokens::parse_csv("alice-token,alice,u-1,\"dev,ops\"\n")?;
        tokens.insert(
            "bob-token",
            UserInfo {
                name: "bob".into(),
                uid: "u-2".into(),
                groups: vec![],
            },
        );
        let authn = Arc::new(Authenticator::new(Some(tokens)));
        let cancel = CancellationToken::new();
        let task = tokio::spawn(serve_with_options(
            listener,
            tls,
            authn,
            router(gates),
            cancel.clone(),
            options,
        ));
        Ok(Server { addr, cancel, task })
    }

    async fn stop(self) -> Result<()> {
        self.cancel.cancel();
        tokio::time::timeout(WAIT, self.task)
            .await
            .context("serve did not stop")???;
        Ok(())
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Proto {
    H1,
    H2,
}

struct ClientOptions<'a> {
    proto: Proto,
    /// PEM certificate and key to present.
    cert: Option<(&'a str, &'a str)>,
}

type Sender = Box<
    dyn FnMut(
            Request<Empty<Bytes>>,
        )
            -> futures::future::BoxFuture<'static, Result<http::Response<hyper::body::Incoming>>>
        + Send,
>;

/// Opens one TLS connection trusting `ca_pem`; returns a request sender.
async fn connect_tls(
    addr: std::net::SocketAddr,
    ca_pem: &str,
    options: ClientOptions<'_>,
) -> Result<Sender> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    roots.add(CertificateDer::from_pem_slice(ca_pem.as_bytes())?)?;
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots);
    let mut config = match options.cert {
        Some((cert, key)) => builder.with_client_auth_cert(
            vec![CertificateDer::from_pem_slice(cert.as_bytes())?],
            PrivateKeyDer::from_pem_slice(key.as_bytes())?,
        )?,
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = vec![match options.proto {
        Proto::H1 => b"http/1.1".to_vec(),
        Proto::H2 => b"h2".to_vec(),
    }];
    let tcp = TcpStream::connect(addr).await?;
    let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(ServerName::try_from("localhost")?, tcp)
        .await?;
    let negotiated = tls.get_ref().1.alpn_protocol().map(<[u8]>::to_vec);
    let want: &[u8] = match options.proto {
        Proto::H1 => b"http/1.1",
        Proto::H2 => b"h2",
    };
    anyhow::ensure!(
        negotiated.as_deref() == Some(want),
        "ALPN negotiated {negotiated:?}"
    );
    http_sender(TokioIo::new(tls), options.proto).await
}

async fn http_sender<I>(io: I, proto: Proto) -> Result<Sender>
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    match proto {
        Proto::H1 => {
            let (mut sender, conn) = hyper::client::conn::http1::handshake(io).await?;
            tokio::spawn(conn);
            Ok(Box::new(move |req| {
                let fut = sender.send_request(req);
                Box::pin(async move { Ok(fut.await?) })
            }))
        }
        Proto::H2 => {
            let (sender, conn) =
                hyper::client::conn::http2::handshake(TokioExecutor::new(), io).await?;
            tokio::spawn(conn);
            Ok(Box::new(move |req| {
                let mut sender = sender.clone();
                Box::pin(async move { Ok(sender.send_request(req).await?) })
            }))
        }
    }
}

fn request(path: &str, token: Option<&str>) -> Result<Request<Empty<Bytes>>> {
    let mut builder = Request::get(format!("https://localhost{path}")).header("host", "localhost");
    if let Some(token) = token {
        builder = builder.header("authorization", format!("Bearer {token}"));
    }
    Ok(builder.body(Empty::new())?)
}

async fn body_json(response: http::Response<hyper::body::Incoming>) -> Result<Value> {
    let bytes = response.into_body().collect().await?.to_bytes();
    Ok(serde_json::from_slice(&bytes)?)
}

#[tokio::test]
async fn tls_identities_over_http1_and_http2() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let pki = Pki::load_or_create(dir.path(), &[])?;
    let server = Server::start(Some(&pki), Gates::default()).await?;
    let admin = (pki.admin().cert_pem.as_str(), pki.admin().key_pem.as_str());
    let (node_cert, node_key) = pki.issue_client_cert(
        "system:node:m1",
        &["system:nodes".to_owned()],
        Duration::from_secs(600),
    )?;

    struct Case<'a> {
        cert: Option<(&'a str, &'a str)>,
        token: Option<&'a str>,
        status: StatusCode,
        name: &'a str,
        groups: Vec<&'a str>,
    }
    let cases = [
        Case {
            cert: Some(admin),
            token: None,
            status: StatusCode::OK,
            name: "system:admin",
            groups: vec!["system:masters", "system:authenticated"],
        },
        // The certificate wins over a (bad) token, as in kube-apiserver.
        Case {
            cert: Some(admin),
            token: Some("wrong"),
            status: StatusCode::OK,
            name: "system:admin",
            groups: vec!["system:masters", "system:authenticated"],
        },
        Case {
            cert: Some((&node_cert, &node_key)),
            token: None,
            status: StatusCode::OK,
            name: "system:node:m1",
            groups: vec!["system:nodes", "system:authenticated"],
        },
        Case {
            cert: None,
            token: Some("alice-token"),
            status: StatusCode::OK,
            name: "alice",
            groups: vec!["dev", "ops", "system:authenticated"],
        },
        Case {
            cert: None,
            token: Some("bob-token"),
            status: StatusCode::OK,
            name: "bob",
            groups: vec!["system:authenticated"],
        },
        Case {
            cert: None,
            token: None,
            status: StatusCode::OK,
            name: "system:anonymous",
            groups: vec!["system:unauthenticated"],
        },
        Case {
            cert: None,
            token: Some("wrong"),
            status: StatusCode::UNAUTHORIZED,
            name: "",
            groups: vec![],
        },
    ];
    for proto in [Proto::H1, Proto::H2] {
        for case in &cases {
            let label = format!(
                "{proto:?} cert={} token={:?}",
                case.cert.is_some(),
                case.token
            );
            let mut send = connect_tls(
                server.addr,
                pki.ca_cert_pem(),
                ClientOptions {
                    proto,
                    cert: case.cert,
                },
            )
            .await?;
            let response = send(request("/whoami", case.token)?).await?;
            assert_eq!(response.status(), case.status, "{label}");
            let body = body_json(response).await?;
            if case.status == StatusCode::OK {
                assert_eq!(
                    body,
                    json!({"name": case.name, "groups": case.groups}),
                    "{label}"
                );
            } else {
                assert_eq!(body["kind"], "Status", "{label}");
                assert_eq!(body["reason"], "Unauthorized", "{label}");
                assert_eq!(body["code"], 401, "{label}");
            }
        }
    }
    server.stop().await
}

#[tokio::test]
async fn client_cert_from_a_foreign_ca_fails_the_handshake() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let pki = Pki::load_or_create(dir.path(), &[])?;
    let other_dir = tempfile::tempdir()?;
    let other = Pki::load_or_create(other_dir.path(), &[])?;
    let server = Server::start(Some(&pki), Gates::default()).await?;
    let foreign = (
        other.admin().cert_pem.as_str(),
        other.admin().key_pem.as_str(),
    );
    // TLS 1.3 reports a rejected client certificate after the client's handshake completes,
    // so the failure may surface on the first request instead.
    let outcome = async {
        let mut send = connect_tls(
            server.addr,
            pki.ca_cert_pem(),
            ClientOptions {
                proto: Proto::H1,
                cert: Some(foreign),
            },
        )
        .await?;
        send(request("/whoami", None)?).await
    }
    .await;
    assert!(
        outcome.is_err(),
        "a foreign client certificate must not be accepted"
    );
    server.stop().await
}

#[tokio::test]
async fn plain_http_test_mode_makes_everyone_admin() -> Result<()> {
    let server = Server::start(None, Gates::default()).await?;
    for proto in [Proto::H1, Proto::H2] {
        let tcp = TcpStream::connect(server.addr).await?;
        let mut send = http_sender(TokioIo::new(tcp), proto).await?;
        let response = send(request("/whoami", Some("wrong"))?).await?;
        assert_eq!(response.status(), StatusCode::OK, "{proto:?}");
        assert_eq!(
            body_json(response).await?,
            json!({"name": "system:admin", "groups": ["system:masters", "system:authenticated"]}),
            "{proto:?}"
        );
    }
    server.stop().await
}

#[tokio::test]
async fn responses_stream_without_buffering() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let pki = Pki::load_or_create(dir.path(), &[])?;
    let gates = Gates::default();
    let server = Server::start(Some(&pki), gates.clone()).await?;
    for proto in [Proto::H1, Proto::H2] {
        let mut send = connect_tls(
            server.addr,
            pki.ca_cert_pem(),
            ClientOptions { proto, cert: None },
        )
        .await?;
        let mut body = send(request("/stream", None)?).await?.into_body();
        // The first chunk arrives while the handler still holds the rest back.
        let first = tokio::time::timeout(WAIT, body.frame())
            .await?
            .context("body ended")??;
        assert_eq!(
            first.into_data().ok(),
            Some(Bytes::from("first\n")),
            "{proto:?}"
        );
        gates.release.notify_one();
        let rest = tokio::time::timeout(WAIT, body.collect())
            .await??
            .to_bytes();
        assert_eq!(rest, Bytes::from("second\n"), "{proto:?}");
    }
    server.stop().await
}

#[tokio::test]
async fn shutdown_lets_in_flight_requests_finish_and_stops_accepting() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let pki = Pki::load_or_create(dir.path(), &[])?;
    let (started_tx, mut started) = mpsc::channel(1);
    let gates = Gates {
        release: Arc::new(Notify::new()),
        started: Some(started_tx),
    };
    let server = Server::start(Some(&pki), gates.clone()).await?;
    let addr = server.addr;

    let mut send = connect_tls(
        addr,
        pki.ca_cert_pem(),
        ClientOptions {
            proto: Proto::H2,
            cert: None,
        },
    )
    .await?;
    let in_flight = tokio::spawn(send(request("/slow", None)?));
    tokio::time::timeout(WAIT, started.recv())
        .await?
        .context("handler never started")?;

    server.cancel.cancel();
    // Once the listener is gone, new connections are refused.
    let refused = tokio::time::timeout(WAIT, async {
        loop {
            if TcpStream::connect(addr).await.is_err() {
                break;
            }
            tokio::task::yield_now().await;
        }
    })
    .await;
    assert!(refused.is_ok(), "listener still accepting after cancel");

    gates.release.notify_one();
    let response = tokio::time::timeout(WAIT, in_flight).await???;
    assert_eq!(response.status(), StatusCode::OK);
    let bytes = response.into_body().collect().await?.to_bytes();
    assert_eq!(bytes, Bytes::from("finished"));
    tokio::time::timeout(WAIT, server.task).await???;
    Ok(())
}

/// A kubeconfig for `server`, authenticating with a client certificate or a token.
fn kubeconfig(
    server: std::net::SocketAddr,
    ca_pem: &str,
    cert: Option<(&str, &str)>,
    token: Option<&str>,
) -> String {
    use base64::Engine;
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let mut user = serde_json::Map::new();
    if let Some((cert, key)) = cert {
        user.insert("client-certificate-data".into(), json!(b64(cert)));
        user.insert("client-key-data".into(), json!(b64(key)));
    }
    if let Some(token) = token {
        user.insert("token".into(), json!(token));
    }
    json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": format!("https://{server}"), "certificate-authority-data": b64(ca_pem)}}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "ctx",
    })
    .to_string()
}

#[tokio::test]
async fn kube_client_with_a_kubeconfig_authenticates_like_kubectl() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let pki = Pki::load_or_create(dir.path(), &[])?;
    let server = Server::start(Some(&pki), Gates::default()).await?;
    let admin = (pki.admin().cert_pem.as_str(), pki.admin().key_pem.as_str());
    let cases = [
        (Some(admin), None, Ok("system:admin")),
        (None, Some("alice-token"), Ok("alice")),
        (None, None, Ok("system:anonymous")),
        (None, Some("wrong"), Err(401)),
    ];
    for (cert, token, want) in cases {
        let yaml = kubeconfig(server.addr, pki.ca_cert_pem(), cert, token);
        let config = kube::Config::from_custom_kubeconfig(
            kube::config::Kubeconfig::from_yaml(&yaml)?,
            &kube::config::KubeConfigOptions::default(),
        )
        .await?;
        let client = kube::Client::try_from(config)?;
        let got = client
            .request_text(Request::get("/whoami").body(Vec::new())?)
            .await;
        match (got, want) {
            (Ok(text), Ok(name)) => {
                let body: Value = serde_json::from_str(&text)?;
                assert_eq!(body["name"], name, "token {token:?}");
            }
            (Err(kube::Error::Api(status)), Err(code)) => assert_eq!(status.code, code),
            (got, want) => anyhow::bail!("token {token:?}: got {got:?}, want {want:?}"),
        }
    }
    server.stop().await
}

#[tokio::test]
async fn requests_still_running_after_the_grace_period_are_cut_off() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let pki = Pki::load_or_create(dir.path(), &[])?;
    let options = ServeOptions {
        shutdown_grace: Duration::from_millis(200),
    };
    // Nobody releases the gate: the stream never ends on its own, like a watch.
    let server = Server::start_with(Some(&pki), Gates::default(), options).await?;
    let mut send = connect_tls(
        server.addr,
        pki.ca_cert_pem(),
        ClientOptions {
            proto: Proto::H1,
            cert: None,
        },
    )
    .await?;
    let mut body = send(request("/stream", None)?).await?.into_body();
    let first = tokio::time::timeout(WAIT, body.frame())
        .await?
        .context("body ended")??;
    assert_eq!(first.into_data().ok(), Some(Bytes::from("first\n")));

    server.stop().await?;
    // The connection was closed under the stream: the body ends with an error, not "second".
    let rest = tokio::time::timeout(WAIT, body.collect()).await?;
    assert!(rest.is_err(), "the stream should have been cut off");
    Ok(())
}

async fn kube_client(
    server: std::net::SocketAddr,
    pki: &Pki,
    cert: Option<(&str, &str)>,
    token: Option<&str>,
) -> Result<kube::Client> {
    let yaml = kubeconfig(server, pki.ca_cert_pem(), cert, token);
    let config = kube::Config::from_custom_kubeconfig(
        kube::config::Kubeconfig::from_yaml(&yaml)?,
        &kube::config::KubeConfigOptions::default(),
    )
    .await?;
    Ok(kube::Client::try_from(config)?)
}

/// What a request came back with: the HTTP code and, for errors, the Status message.
async fn call(
    client: &kube::Client,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> Result<(u16, String)> {
    let request = Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", "application/json")
        .body(body.map(|b| b.to_string().into_bytes()).unwrap_or_default())?;
    match client.request_text(request).await {
        Ok(_) => Ok((200, String::new())),
        Err(kube::Error::Api(status)) => Ok((status.code, status.message)),
        Err(e) => Err(e.into()),
    }
}

type Call<'a> = (
    &'a kube::Client,
    &'a str,
    &'a str,
    Option<Value>,
    u16,
    &'a str,
);

/// The whole chain over real TLS: default roles, a binding created through the API, RBAC
/// deciding, kube-apiserver's 403 messages.
#[tokio::test]
async fn rbac_over_the_real_api_server() -> Result<()> {
    use apiserver_auth::rbac::{RbacAuthorizer, bootstrap::bootstrap_rbac_objects};
    let dir = tempfile::tempdir()?;
    let pki = Pki::load_or_create(dir.path(), &[])?;
    let store = Arc::new(store::memory::MemoryStore::new());
    // Seeded straight into the store, as a bootstrap does (names like
    // `system:public-info-viewer` are valid RBAC names that a create would have to accept).
    for (key, object) in bootstrap_rbac_objects() {
        store.create(&key, Bytes::from(object.to_string())).await?;
    }
    let cancel = CancellationToken::new();
    let options = karmada_apiserver::ApiServerOptions {
        authorizer: RbacAuthorizer::new(store.clone(), cancel.clone()),
        cancel: cancel.clone(),
        ..Default::default()
    };
    let api = karmada_apiserver::ApiServer::new(store, options).await?;
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let tokens = StaticTokens::parse_csv("alice-token,alice,u-1,\"dev\"\n")?;
    let serving = tokio::spawn(serve_with_options(
        listener,
        Some(apiserver_auth::tls::server_config(&pki)?),
        Arc::new(Authenticator::new(Some(tokens))),
        karmada_apiserver::router(api),
        cancel.clone(),
        ServeOptions::default(),
    ));

    let admin = kube_client(
        addr,
        &pki,
        Some((pki.admin_cert_pem(), pki.admin_key_pem())),
        None,
    )
    .await?;
    let binding = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "alice-view", "namespace": "default"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"}],
    });
    let path = "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings";
    assert_eq!(call(&admin, "POST", path, Some(binding)).await?.0, 200);

    let alice = kube_client(addr, &pki, None, Some("alice-token")).await?;
    let anonymous = kube_client(addr, &pki, None, None).await?;
    let configmap = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}});
    // (client, method, path, body, expected code, expected Status message)
    let cases: Vec<Call<'_>> = vec![
        (
            &alice,
            "GET",
            "/api/v1/namespaces/default/configmaps",
            None,
            200,
            "",
        ),
        (&alice, "GET", "/apis", None, 200, ""),
        (
            &alice,
            "POST",
            "/api/v1/namespaces/default/configmaps",
            Some(configmap.clone()),
            403,
            r#"configmaps is forbidden: User "alice" cannot create resource "configmaps" in API group "" in the namespace "default""#,
        ),
        (
            &alice,
            "GET",
            "/api/v1/namespaces/kube-system/configmaps",
            None,
            403,
            r#"configmaps is forbidden: User "alice" cannot list resource "configmaps" in API group "" in the namespace "kube-system""#,
        ),
        (&anonymous, "GET", "/healthz", None, 200, ""),
        (&anonymous, "GET", "/version", None, 200, ""),
        (
            &anonymous,
            "GET",
            "/apis",
            None,
            403,
            r#"forbidden: User "system:anonymous" cannot get path "/apis""#,
        ),
        (
            &admin,
            "POST",
            "/api/v1/namespaces/default/configmaps",
            Some(configmap),
            200,
            "",
        ),
    ];
    for (client, method, path, body, code, message) in cases {
        let (got_code, got_message) = call(client, method, path, body).await?;
        assert_eq!(
            (got_code, got_message.as_str()),
            (code, message),
            "{method} {path}"
        );
    }

    cancel.cancel();
    tokio::time::timeout(WAIT, serving).await???;
    Ok(())
}

/// A data directory from an older version: its bootstrap ClusterRoles gain the rules this version adds when the
/// server starts, keep what an administrator added, and stay as they are with `autoupdate: "false"`.
#[tokio::test]
async fn bootstrap_cluster_roles_are_reconciled_at_start() -> Result<()> {
    use apiserver_auth::rbac::bootstrap::bootstrap_cluster_roles;
    use apiserver_auth::rbac::storage_key;
    let roles = bootstrap_cluster_roles();
    let role = |name: &str| -> Value {
        roles
            .iter()
            .find(|r| r["metadata"]["name"] == name)
            .cloned()
            .unwrap_or_default()
    };
    let store = Arc::new(store::memory::MemoryStore::new());
    let admins_rule = json!({"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]});
    let mut older = role("system:basic-user");
    older["rules"] = json!([older["rules"][0].clone(), admins_rule.clone()]);
    let mut pinned = role("view");
    pinned["rules"] = json!([admins_rule.clone()]);
    pinned["metadata"]["annotations"]["rbac.authorization.kubernetes.io/autoupdate"] =
        json!("false");
    for object in [&older, &pinned] {
        let key = storage_key(
            "clusterroles",
            "",
            object["metadata"]["name"].as_str().unwrap_or_default(),
        );
        store.create(&key, Bytes::from(object.to_string())).await?;
    }
    let options = karmada_apiserver::ApiServerOptions {
        bootstrap_objects: roles.clone(),
        ..Default::default()
    };
    let api = karmada_apiserver::ApiServer::new(store.clone(), options).await?;
    let stored = |name: &'static str| {
        let store = store.clone();
        async move {
            let kv = store
                .get(&storage_key("clusterroles", "", name))
                .await?
                .context("role stored")?;
            anyhow::Ok(serde_json::from_slice::<Value>(&kv.value)?)
        }
    };
    let basic_user = stored("system:basic-user").await?;
    let expected = role("system:basic-user");
    assert_eq!(
        basic_user["rules"],
        json!([
            expected["rules"][0].clone(),
            admins_rule.clone(),
            expected["rules"][1].clone()
        ])
    );
    assert_eq!(stored("view").await?["rules"], json!([admins_rule]));
    api.shutdown().await;
    Ok(())
}

/// curl POSTs `body` (a file) over HTTP/1.1 or HTTP/2 by prior knowledge; its exit code, the
/// status and the body it received.
fn curl_post(
    addr: std::net::SocketAddr,
    proto: Proto,
    path: &str,
    body: &std::path::Path,
) -> Result<(i32, String, String)> {
    let version = match proto {
        Proto::H1 => "--http1.1",
        Proto::H2 => "--http2-prior-knowledge",
    };
    let out = std::process::Command::new("curl")
        .args([
            "-sS",
            version,
            "-H",
            "content-type: application/json",
            "-w",
            "\n%{http_code}",
        ])
        .arg("--data-binary")
        .arg(format!("@{}", body.display()))
        .arg(format!("http://{addr}{path}"))
        .output()
        .context("curl runs (scripts/setup.sh installs it)")?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let (answer, code) = stdout.rsplit_once('\n').unwrap_or(("", &stdout));
    Ok((
        out.status.code().unwrap_or(-1),
        code.to_string(),
        format!("{answer}{}", String::from_utf8_lossy(&out.stderr)),
    ))
}

/// A body over the limit gets kube-apiserver's 413 Status over HTTP/2 as over HTTP/1.1, whether
/// its length was declared (curl) or only seen while reading (a chunked upload); one under the
/// limit is created. Over HTTP/2 the stream must end cleanly: curl fails with "Stream error in
/// the HTTP/2 framing layer" when the server resets it after answering.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_bodies_get_the_same_413_over_http1_and_http2() -> Result<()> {
    let store: Arc<dyn Store> = Arc::new(store::memory::MemoryStore::new());
    let api =
        karmada_apiserver::ApiServer::new(store, karmada_apiserver::ApiServerOptions::default())
            .await?;
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let cancel = CancellationToken::new();
    let task = tokio::spawn(karmada_apiserver::serve::serve(
        listener,
        None,
        Arc::new(Authenticator::new(None)),
        karmada_apiserver::router(api.clone()),
        cancel.clone(),
    ));
    let dir = tempfile::tempdir()?;
    let config_map = |name: &str, size: usize| -> Result<std::path::PathBuf> {
        let path = dir.path().join(format!("{name}.json"));
        let object = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
                            "data": {"x": "x".repeat(size)}});
        std::fs::write(&path, object.to_string())?;
        Ok(path)
    };
    let path = "/api/v1/namespaces/default/configmaps";
    let big = config_map("big", 4 * 1024 * 1024)?;
    let mut answers = Vec::new();
    for proto in [Proto::H1, Proto::H2] {
        for chunked in [false, true] {
            let label = format!("{proto:?} chunked={chunked}");
            let (exit, status, answer) = if chunked {
                let big = big.clone();
                let run = tokio::task::spawn_blocking(move || {
                    let version = match proto {
                        Proto::H1 => "--http1.1",
                        Proto::H2 => "--http2-prior-knowledge",
                    };
                    std::process::Command::new("curl")
                        .args(["-sS", version, "-H", "content-type: application/json"])
                        .args(["-H", "transfer-encoding: chunked", "-w", "\n%{http_code}"])
                        .arg("-T")
                        .arg(&big)
                        .args(["-X", "POST"])
                        .arg(format!(
                            "http://{addr}/api/v1/namespaces/default/configmaps"
                        ))
                        .output()
                });
                let out = run
                    .await?
                    .context("curl runs (scripts/setup.sh installs it)")?;
                let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
                let (answer, code) = stdout.rsplit_once('\n').unwrap_or(("", &stdout));
                (
                    out.status.code().unwrap_or(-1),
                    code.to_string(),
                    format!("{answer}{}", String::from_utf8_lossy(&out.stderr)),
                )
            } else {
                let big = big.clone();
                tokio::task::spawn_blocking(move || curl_post(addr, proto, path, &big)).await??
            };
            assert_eq!((exit, status.as_str()), (0, "413"), "{label}: {answer}");
            let status_body: Value = serde_json::from_str(&answer)
                .with_context(|| format!("{label}: 413 body {answer:?}"))?;
            assert_eq!(status_body["reason"], "RequestEntityTooLarge", "{label}");
            answers.push(answer);
        }
        let small = config_map(&format!("small-{proto:?}").to_lowercase(), 10)?;
        let (exit, status, answer) =
            tokio::task::spawn_blocking(move || curl_post(addr, proto, path, &small)).await??;
        assert_eq!((exit, status.as_str()), (0, "201"), "{proto:?}: {answer}");
    }
    assert!(
        answers.iter().all(|a| *a == answers[0]),
        "the same Status bytes every way: {answers:?}"
    );
    cancel.cancel();
    tokio::time::timeout(WAIT, task).await???;
    api.shutdown().await;
    Ok(())
}
