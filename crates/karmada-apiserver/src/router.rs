//! HTTP routing: maps every request path to a non-resource endpoint (version, health, metrics,
//! discovery, OpenAPI) or to a resource and verb, authorizes it, and renders the answer.
//!
//! This [`router`] is the in-process seam (`kube::Client::new(router, "default")`) and what the
//! TLS accept loop serves. Invariants: every error leaves as a `Status` built by
//! `ApiError::to_status`; authorization happens before any body is decoded or anything is
//! read from the store; query strings with a leading `&` or nothing after `?` are accepted.
//! A resource request's verb and subresource pick its handler from the table in `resource`.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use apimachinery::{ApiError, ResourceDef};
use apiserver_auth::{RequestAttributes, UserInfo, forbidden_message};
use axum::Router;
use axum::body::Body;
use axum::extract::{Query, Request, State};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http::{HeaderMap, Method, StatusCode, header};
use serde_json::{Value, json};

use crate::discovery_cache::{DiscoveryKey, Rendered};
use crate::hooks;
use crate::impersonation;
use crate::metrics::{COMPONENT, RequestLabels, reported_verb};
use crate::respond::{error_response, json_response};
use crate::reviews::{self, Review};
use crate::server::ApiServer;

mod resource;

/// The API server's HTTP router.
pub fn router(server: Arc<ApiServer>) -> Router {
    Router::new().fallback(dispatch).with_state(server)
}

/// A resource request's target.
struct Target {
    def: Arc<ResourceDef>,
    namespace: Option<String>,
    name: Option<String>,
    sub: Option<String>,
}

enum Endpoint {
    Version,
    Health,
    Metrics,
    OpenApiV2,
    OpenApiV3(Option<(String, String)>),
    Discovery(Vec<String>),
    Review(Review),
    /// `/.well-known/openid-configuration`: OIDC discovery for ServiceAccount tokens.
    OpenIdConfiguration,
    /// `/openid/v1/jwks`: the keys ServiceAccount tokens are signed with.
    Jwks,
    Resource(Target),
    /// `custom.metrics.k8s.io`, when the server has a provider for it.
    CustomMetrics(crate::custom_metrics::Request),
}

struct Ctx {
    method: Method,
    /// HTTP/1.1 or HTTP/2: an oversized body is handled differently (see `request_body`).
    version: http::Version,
    headers: HeaderMap,
    query: HashMap<String, String>,
    /// HTTP/2's `:authority` (HTTP/1.1 carries it in the `Host` header); a reference-counted copy.
    authority: Option<http::uri::Authority>,
}

impl Ctx {
    fn q(&self, key: &str) -> Option<String> {
        self.query.get(key).cloned()
    }

    fn header(&self, name: header::HeaderName) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// `host[:port]` the client addressed.
    fn host(&self) -> Option<&str> {
        self.authority
            .as_ref()
            .map(http::uri::Authority::as_str)
            .or_else(|| self.header(header::HOST))
    }
}

async fn dispatch(State(server): State<Arc<ApiServer>>, request: Request) -> Response {
    if crate::proxy::parse_target(request.uri().path()).is_some() {
        return crate::proxy::serve(server, request).await;
    }
    let request = match crate::aggregator::intercept(&server, request).await {
        Ok(response) => return response,
        Err(request) => request,
    };
    let started = Instant::now();
    server.metrics.request_started();
    let (parts, body) = request.into_parts();
    let user = parts
        .extensions
        .get::<UserInfo>()
        .cloned()
        .or_else(|| server.default_user());
    let path = parts.uri.path().to_string();
    let query = Query::<HashMap<String, String>>::try_from_uri(&parts.uri)
        .map(|q| q.0)
        .unwrap_or_default();
    let authority = parts.uri.authority().cloned();
    let ctx = Ctx {
        version: parts.version,
        method: parts.method,
        headers: parts.headers,
        query,
        authority,
    };
    let mut labels = RequestLabels::non_resource(&ctx.method);
    let response = match user {
        None => error_response(&ApiError::unauthorized()),
        Some(caller) => {
            let outcome = match impersonation::effective_user(
                server.authorizer.as_ref(),
                caller,
                &ctx.headers,
            )
            .await
            {
                Ok(user) => handle(&server, &ctx, &path, &user, body, &mut labels).await,
                Err(err) => Err(err),
            };
            match outcome {
                Ok(response) => response,
                Err(err) => error_response(&err),
            }
        }
    };
    // One line per request, like kube-apiserver's `-v=3` HTTP log: `RUST_LOG=karmada_apiserver::requests=debug`.
    tracing::debug!(
        target: "karmada_apiserver::requests",
        verb = ctx.method.as_str(),
        path,
        query = ?ctx.query,
        status = response.status().as_u16(),
        user_agent = ctx.header(header::USER_AGENT).unwrap_or_default(),
        latency_us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX),
    );
    // A watch streams: its size is not known, and kube-apiserver does not record one either.
    let size = axum::body::HttpBody::size_hint(response.body()).exact();
    server
        .metrics
        .observe_request(labels, response.status().as_u16(), started.elapsed(), size);
    server.metrics.request_finished();
    response
}

/// The ServiceAccount token issuer, whose key the OIDC discovery documents publish.
fn token_issuer(
    server: &ApiServer,
) -> Result<&apiserver_auth::service_account::TokenIssuer, ApiError> {
    server
        .options
        .service_account_tokens
        .as_ref()
        .map(|tokens| tokens.issuer.as_ref())
        .ok_or_else(ApiError::not_found_path)
}

/// An OIDC discovery document; relying parties may cache it for an hour, as kube-apiserver allows.
fn discovery_response(document: &Value, content_type: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, "public, max-age=3600"),
        ],
        document.to_string(),
    )
        .into_response()
}

fn parse_endpoint(server: &ApiServer, path: &str) -> Result<Endpoint, ApiError> {
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let owned = || segments.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    match segments.as_slice() {
        ["version"] => return Ok(Endpoint::Version),
        ["healthz" | "readyz" | "livez", ..] => return Ok(Endpoint::Health),
        ["metrics"] => return Ok(Endpoint::Metrics),
        [".well-known", "openid-configuration"]
            if server.options.service_account_tokens.is_some() =>
        {
            return Ok(Endpoint::OpenIdConfiguration);
        }
        ["openid", "v1", "jwks"] if server.options.service_account_tokens.is_some() => {
            return Ok(Endpoint::Jwks);
        }
        ["openapi", "v2"] => return Ok(Endpoint::OpenApiV2),
        ["openapi", "v3"] => return Ok(Endpoint::OpenApiV3(None)),
        ["openapi", "v3", "api", version] => {
            return Ok(Endpoint::OpenApiV3(Some((
                String::new(),
                (*version).into(),
            ))));
        }
        ["openapi", "v3", "apis", group, version] => {
            return Ok(Endpoint::OpenApiV3(Some((
                (*group).into(),
                (*version).into(),
            ))));
        }
        _ if server.options.custom_metrics.is_some() => {
            if let Some(parsed) = crate::custom_metrics::parse(&segments) {
                return parsed.map(Endpoint::CustomMetrics);
            }
        }
        _ => {}
    }
    match segments.as_slice() {
        ["api"] | ["api", _] | ["apis"] | ["apis", _] | ["apis", _, _] => {
            return Ok(Endpoint::Discovery(owned()));
        }
        _ => {}
    }
    if let Some(review) = Review::parse(&segments) {
        return Ok(Endpoint::Review(review));
    }
    let (group, version, rest) = match segments.as_slice() {
        ["api", version, rest @ ..] => ("", *version, rest),
        ["apis", group, version, rest @ ..] => (*group, *version, rest),
        _ => return Err(ApiError::not_found_path()),
    };
    let registry = server.registry();
    let namespaced_target = match rest {
        ["namespaces", ns, plural, tail @ ..] => registry
            .lookup(group, version, plural)
            .filter(|d| d.namespaced)
            .map(|def| (def, Some((*ns).to_string()), tail)),
        _ => None,
    };
    let (def, namespace, tail) = match namespaced_target {
        Some(found) => found,
        None => match rest {
            [plural, tail @ ..] => {
                let def = registry
                    .lookup(group, version, plural)
                    .ok_or_else(ApiError::not_found_path)?;
                if def.namespaced && !tail.is_empty() {
                    return Err(ApiError::not_found_path());
                }
                (def, None, tail)
            }
            [] => return Err(ApiError::not_found_path()),
        },
    };
    let (name, sub) = match tail {
        [] => (None, None),
        [name] => (Some((*name).to_string()), None),
        [name, sub] => (Some((*name).to_string()), Some((*sub).to_string())),
        _ => return Err(ApiError::not_found_path()),
    };
    if let Some(sub) = &sub {
        let known = match sub.as_str() {
            "status" => def.status_subresource,
            "scale" => def.scale_subresource.is_some(),
            "finalize" => crate::handlers::create::is_namespace(&def),
            "approval" => is_csr(&def),
            "token" => {
                apiserver_views::discovery::is_service_accounts(&def)
                    && server.options.service_account_tokens.is_some()
            }
            _ => false,
        };
        if !known {
            return Err(ApiError::not_found_path());
        }
    }
    Ok(Endpoint::Resource(Target {
        def,
        namespace,
        name,
        sub,
    }))
}

fn verb_of(ctx: &Ctx, target: &Target) -> Result<&'static str, ApiError> {
    let is_watch = ctx.q("watch").is_some_and(|w| w == "true" || w == "1");
    if target.sub.as_deref() == Some("token") && ctx.method != Method::POST {
        return Err(ApiError::method_not_allowed(format!(
            "the server does not allow this method on the requested resource ({}); a token is requested with POST",
            ctx.method
        )));
    }
    let verb = match (&ctx.method, target.name.is_some()) {
        (&Method::GET, false) if is_watch => "watch",
        (&Method::GET, false) => "list",
        (&Method::GET, true) => "get",
        (&Method::POST, false) => "create",
        // TokenRequest: a create on a named ServiceAccount's subresource.
        (&Method::POST, true) if target.sub.as_deref() == Some("token") => "create",
        (&Method::PUT, true) => "update",
        (&Method::PATCH, true) => "patch",
        (&Method::DELETE, true) => "delete",
        (&Method::DELETE, false) => "deletecollection",
        (method, _) => {
            return Err(ApiError::method_not_allowed(format!(
                "the server does not allow this method on the requested resource ({method})"
            )));
        }
    };
    Ok(verb)
}

async fn handle(
    server: &Arc<ApiServer>,
    ctx: &Ctx,
    path: &str,
    user: &UserInfo,
    body: Body,
    labels: &mut RequestLabels,
) -> Result<Response, ApiError> {
    let endpoint = parse_endpoint(server, path)?;
    let (attrs, endpoint_labels) = request_attributes(ctx, path, &endpoint)?;
    if let Some(endpoint_labels) = endpoint_labels {
        *labels = endpoint_labels;
    }
    if !server.authorizer.authorize(user, &attrs).await.is_allowed() {
        return Err(ApiError::forbidden(forbidden_message(user, &attrs)));
    }
    serve_endpoint(server, ctx, endpoint, user, body).await
}

/// What the authorizer is asked about a request, and the labels its metrics carry (None: the non-resource
/// labels the caller already holds).
fn request_attributes(
    ctx: &Ctx,
    path: &str,
    endpoint: &Endpoint,
) -> Result<(RequestAttributes, Option<RequestLabels>), ApiError> {
    let mut labels = None;
    let attributes = match endpoint {
        Endpoint::Resource(target) => {
            let verb = verb_of(ctx, target)?;
            let applying = verb == "patch"
                && ctx
                    .header(header::CONTENT_TYPE)
                    .is_some_and(|t| t.starts_with("application/apply-patch"));
            labels = Some(RequestLabels {
                verb: reported_verb(if applying { "apply" } else { verb }),
                group: target.def.group.clone(),
                version: target.def.version.clone(),
                resource: target.def.plural.clone(),
                subresource: target.sub.clone().unwrap_or_default(),
                scope: match (&target.name, &target.namespace) {
                    (Some(_), _) => "resource",
                    (None, Some(_)) => "namespace",
                    (None, None) => "cluster",
                },
                component: COMPONENT,
            });
            RequestAttributes {
                verb: verb.to_string(),
                api_group: target.def.group.clone(),
                resource: target.def.plural.clone(),
                subresource: target.sub.clone().unwrap_or_default(),
                namespace: target.namespace.clone().unwrap_or_default(),
                name: target
                    .name
                    .clone()
                    .unwrap_or_else(|| selected_name(ctx, verb)),
                resource_request: true,
                path: path.to_string(),
            }
        }
        Endpoint::Review(review) => {
            let attributes = review.request_attributes(path);
            labels = Some(RequestLabels {
                verb: reported_verb("create"),
                group: attributes.api_group.clone(),
                version: "v1".to_string(),
                resource: attributes.resource.clone(),
                scope: if attributes.namespace.is_empty() {
                    "cluster"
                } else {
                    "namespace"
                },
                ..RequestLabels::non_resource(&ctx.method)
            });
            attributes
        }
        Endpoint::CustomMetrics(request) => match request.resource_attributes(path) {
            Some(attributes) => {
                labels = Some(RequestLabels {
                    verb: reported_verb(&attributes.verb),
                    group: attributes.api_group.clone(),
                    version: request.version().to_string(),
                    resource: attributes.resource.clone(),
                    subresource: attributes.subresource.clone(),
                    scope: "resource",
                    component: COMPONENT,
                });
                attributes
            }
            None => non_resource_attributes(ctx, path),
        },
        _ => non_resource_attributes(ctx, path),
    };
    Ok((attributes, labels))
}

/// Answers an authorized request.
async fn serve_endpoint(
    server: &Arc<ApiServer>,
    ctx: &Ctx,
    endpoint: Endpoint,
    user: &UserInfo,
    body: Body,
) -> Result<Response, ApiError> {
    match endpoint {
        Endpoint::Version => {
            let info = match &server.options.kubernetes_version {
                Some(version) => version_info_for(version),
                None => version_info(),
            };
            Ok(json_response(StatusCode::OK, &info, &[]))
        }
        Endpoint::Health => {
            Ok(([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], "ok").into_response())
        }
        Endpoint::OpenIdConfiguration => {
            // The keys are published where this client reached the server (kube-apiserver names its external
            // address unless --service-account-jwks-uri says otherwise).
            let host = ctx.host().unwrap_or("localhost");
            let jwks_uri = format!("https://{host}/openid/v1/jwks");
            let document = token_issuer(server)?.openid_configuration(&jwks_uri);
            Ok(discovery_response(&document, "application/json"))
        }
        Endpoint::Jwks => Ok(discovery_response(
            &token_issuer(server)?.jwks(),
            "application/jwk-set+json",
        )),
        Endpoint::Metrics => Ok((
            [(header::CONTENT_TYPE, crate::metrics::METRICS_CONTENT_TYPE)],
            server.metrics.encode(),
        )
            .into_response()),
        Endpoint::OpenApiV2 => {
            let (bytes, content_type) = hooks::openapi_v2();
            Ok(([(header::CONTENT_TYPE, content_type)], bytes).into_response())
        }
        Endpoint::OpenApiV3(None) => {
            // kubectl reads the index before every apply (to decide on server-side field validation);
            // it hashes every group-version's document, so it is rendered once per registry snapshot.
            let registry = server.registry();
            let key = DiscoveryKey {
                segments: vec!["openapi".into(), "v3".into()],
                aggregated: false,
            };
            let rendered = registry.discovery.get_or_render(key, || Rendered {
                body: hooks::openapi_v3(&registry.defs(), None).map(|i| Bytes::from(i.to_string())),
                content_type: "application/json",
            });
            let body = rendered.body.ok_or_else(ApiError::not_found_path)?;
            Ok(([(header::CONTENT_TYPE, rendered.content_type)], body).into_response())
        }
        Endpoint::OpenApiV3(Some((group, version))) => {
            let defs = server.registry().defs();
            let doc = hooks::openapi_v3(&defs, Some((group.as_str(), version.as_str())))
                .ok_or_else(ApiError::not_found_path)?;
            Ok(json_response(StatusCode::OK, &doc, &[]))
        }
        Endpoint::Discovery(segments) => discovery(server, ctx, &segments),
        Endpoint::Review(review) => {
            if ctx.method != Method::POST {
                return Err(ApiError::method_not_allowed(format!(
                    "a {} is only created (POST), never read or changed ({})",
                    review.kind(),
                    ctx.method
                )));
            }
            let body = read_body(server, ctx, body).await?;
            let object = reviews::decode(&review, ctx.header(header::CONTENT_TYPE), &body)?;
            let answer = reviews::serve(server.authorizer.as_ref(), user, &review, object).await?;
            Ok(json_response(StatusCode::CREATED, &answer, &[]))
        }
        Endpoint::Resource(target) => {
            let verb = verb_of(ctx, &target)?;
            resource::resource(server, ctx, target, verb, body, user).await
        }
        Endpoint::CustomMetrics(request) => {
            let provider = server
                .options
                .custom_metrics
                .as_deref()
                .ok_or_else(ApiError::not_found_path)?;
            let answer =
                crate::custom_metrics::serve(server, provider, &ctx.method, request, &ctx.query)
                    .await?;
            Ok(json_response(StatusCode::OK, &answer, &[]))
        }
    }
}

/// A request that addresses no resource (discovery, health, ...).
fn non_resource_attributes(ctx: &Ctx, path: &str) -> RequestAttributes {
    RequestAttributes {
        verb: ctx.method.as_str().to_ascii_lowercase(),
        resource_request: false,
        path: path.to_string(),
        ..RequestAttributes::default()
    }
}

/// CertificateSigningRequests have an `approval` subresource and a requestor the server sets.
fn is_csr(def: &ResourceDef) -> bool {
    def.group == "certificates.k8s.io" && def.plural == "certificatesigningrequests"
}

/// The name a list or watch pins with `fieldSelector=metadata.name=X`: kube-apiserver
/// authorizes such requests as requests for that one object.
fn selected_name(ctx: &Ctx, verb: &str) -> String {
    if !matches!(verb, "list" | "watch") {
        return String::new();
    }
    ctx.q("fieldSelector")
        .and_then(|s| apimachinery::fields::FieldSelector::parse(&s).ok())
        .and_then(|s| s.required_value("metadata.name").map(str::to_string))
        .unwrap_or_default()
}

/// `/version`: kubectl's dispatcher picks its client version from `major`/`minor`.
pub fn version_info() -> Value {
    json!({
        "major": "1",
        "minor": "32",
        "gitVersion": "v1.32.0-karmada-rs",
        "gitCommit": env!("CARGO_PKG_VERSION"),
        "gitTreeState": "clean",
        "buildDate": "2025-01-01T00:00:00Z",
        "goVersion": "go1.23",
        "compiler": "gc",
        "platform": "linux/amd64",
    })
}

/// `/version` for a server that reports `git_version` (e.g. `v1.30.2`): `major` and `minor`
/// are its first two numbers, as kube-apiserver derives them.
pub fn version_info_for(git_version: &str) -> Value {
    let numbers: Vec<&str> = git_version
        .trim_start_matches('v')
        .split(['.', '-', '+'])
        .collect();
    let mut info = version_info();
    info["major"] = json!(numbers.first().copied().unwrap_or_default());
    info["minor"] = json!(numbers.get(1).copied().unwrap_or_default());
    info["gitVersion"] = json!(git_version);
    info
}

fn discovery(server: &ApiServer, ctx: &Ctx, segments: &[String]) -> Result<Response, ApiError> {
    // Only the v2 aggregated form is served; a client that accepts just v2beta1 (kubectl
    // before 1.30) gets the legacy documents, which it also understands.
    let wants_aggregated = ctx.header(header::ACCEPT).is_some_and(|accept| {
        accept.split(',').any(|media| {
            let params: Vec<&str> = media.split(';').map(str::trim).collect();
            params.contains(&"as=APIGroupDiscoveryList") && params.contains(&"v=v2")
        })
    });
    let refs: Vec<&str> = segments.iter().map(String::as_str).collect();
    let aggregated = wants_aggregated && matches!(refs.as_slice(), ["api"] | ["apis"]);
    let registry = server.registry();
    let custom_metrics = server.options.custom_metrics.is_some();
    let key = DiscoveryKey {
        segments: segments.to_vec(),
        aggregated,
    };
    let render_now = || {
        let defs = registry.defs();
        if aggregated {
            let (body, content_type) =
                hooks::aggregated_discovery(&defs, refs == ["api"], custom_metrics);
            Rendered {
                body: Some(Bytes::from(body.to_string())),
                content_type,
            }
        } else {
            let body = hooks::legacy_discovery(
                &defs,
                &refs,
                &server.options.advertise_address,
                custom_metrics,
            );
            Rendered {
                body: body.map(|b| Bytes::from(b.to_string())),
                content_type: "application/json",
            }
        }
    };
    let rendered = registry.discovery.get_or_render(key, render_now);
    let body = rendered.body.ok_or_else(ApiError::not_found_path)?;
    Ok((
        StatusCode::OK,
        [(header::CONTENT_TYPE, rendered.content_type)],
        body,
    )
        .into_response())
}

async fn read_body(server: &ApiServer, ctx: &Ctx, body: Body) -> Result<bytes::Bytes, ApiError> {
    crate::request_body::read_limited(
        body,
        server.options.max_body_bytes,
        ctx.version,
        &ctx.headers,
    )
    .await
}
