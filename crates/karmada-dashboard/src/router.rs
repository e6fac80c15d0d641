//! Routes: each page needs a session (else the login page), renders its view with the session's client,
//! and turns a 401 from the API into the end of the session.

use std::collections::HashMap;
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use http::{HeaderMap, HeaderValue, StatusCode, header};
use tokio_util::sync::CancellationToken;

use crate::api::ApiError;
use crate::control_plane::{ControlPlane, Credentials, LoginError, whoami};
use crate::html::{Page, layout, respond};
use crate::session::{Session, Sessions, same_secret, set_cookie};
use crate::views::{self, View, actions};
use crate::{assets, live};

/// Largest form accepted (a pasted kubeconfig with a certificate fits easily).
const MAX_FORM: usize = 256 * 1024;

pub struct App {
    pub control_plane: ControlPlane,
    pub sessions: Sessions,
    pub cancel: CancellationToken,
}

type Shared = State<Arc<App>>;
type Params = Query<HashMap<String, String>>;

pub fn router(app: Arc<App>) -> Router {
    Router::new()
        .route("/", get(overview))
        .route("/workloads/{namespace}/{name}", get(workload))
        .route("/policies", get(policies))
        .route(
            "/policies/delete",
            get(delete_policy_confirm).post(delete_policy),
        )
        .route("/failover", get(failover))
        .route("/services", get(services))
        .route("/overrides", get(overrides))
        .route("/clusters/{name}/cordon", get(cordon_confirm).post(cordon))
        .route("/clusters/{name}/taint", get(taint_page).post(taint))
        .route("/promote", get(promote_page).post(promote))
        .route("/live/{view}", get(live_events))
        .route("/login", get(login_page).post(login))
        .route("/logout", axum::routing::post(logout))
        .route("/assets/app.js", get(assets::app_js))
        .route("/assets/app.css", get(assets::app_css))
        .route("/healthz", get(|| async { "ok" }))
        .with_state(app)
}

/// Where a request without a live session goes.
fn to_login() -> Response {
    Redirect::to("/login").into_response()
}

/// What a paginated list page says when its `continue` token is refused: the list changed (410 Gone after
/// compaction or expiry, or a token this server never issued), with a way back to the first page.
pub fn stale_list(first_page: &str) -> String {
    format!(
        "<p class=\"notice\" id=\"stale-list\">The list changed since this page was read: its continue link has \
         expired. <a id=\"restart-list\" class=\"button\" href=\"{}\">Start again from the first page</a></p>",
        crate::html::esc(first_page)
    )
}

/// A page: the view in the layout, or alone for `?fragment=1`. A 401 ends the session. `first_page` is the
/// view's own path when it paginates: a refused continue token then offers to start over.
fn page(
    app: &App,
    id: &str,
    session: &Session,
    params: &HashMap<String, String>,
    first_page: Option<&str>,
    view: Result<View, ApiError>,
) -> Response {
    let view = match (view, first_page) {
        (Err(ApiError::Expired(_) | ApiError::Invalid(_)), Some(first))
            if params.contains_key("continue") =>
        {
            Ok(View {
                title: "List changed".into(),
                content: stale_list(first),
                live: None,
            })
        }
        (view, _) => view,
    };
    match view {
        Ok(view) => {
            if params.get("fragment").is_some() {
                return respond(StatusCode::OK, view.content);
            }
            let page = Page {
                title: &view.title,
                user: Some(&session.user),
                csrf: Some(&session.csrf),
                live: view.live,
            };
            respond(StatusCode::OK, layout(&page, &view.content))
        }
        Err(ApiError::Unauthorized(_)) => end_session(app, id),
        Err(error) => {
            let status = match error {
                ApiError::Forbidden(_) => StatusCode::FORBIDDEN,
                ApiError::NotFound(_) => StatusCode::NOT_FOUND,
                ApiError::Expired(_) => StatusCode::GONE,
                ApiError::Invalid(_) => StatusCode::BAD_REQUEST,
                _ => StatusCode::BAD_GATEWAY,
            };
            let content = format!(
                "<p class=\"error\" id=\"page-error\">{}</p>",
                crate::html::esc(&error.to_string())
            );
            if params.get("fragment").is_some() {
                return respond(status, content);
            }
            let page = Page {
                title: "Error",
                user: Some(&session.user),
                csrf: Some(&session.csrf),
                live: None,
            };
            respond(status, layout(&page, &content))
        }
    }
}

/// Drops the session and sends the browser to the login page saying why.
fn end_session(app: &App, id: &str) -> Response {
    app.sessions.end(id);
    let mut response = Redirect::to("/login?ended=1").into_response();
    if let Ok(cookie) = HeaderValue::from_str(&set_cookie("")) {
        response.headers_mut().insert(header::SET_COOKIE, cookie);
    }
    response
}

async fn overview(State(app): Shared, headers: HeaderMap, Query(params): Params) -> Response {
    let Some((id, s)) = app.sessions.of_request(&headers) else {
        return to_login();
    };
    let view = views::overview::render(&s.client, params.get("continue").map(String::as_str)).await;
    page(&app, &id, &s, &params, Some("/"), view)
}

async fn workload(
    State(app): Shared,
    headers: HeaderMap,
    Path((namespace, name)): Path<(String, String)>,
    Query(params): Params,
) -> Response {
    let Some((id, s)) = app.sessions.of_request(&headers) else {
        return to_login();
    };
    let view = views::workload::render(&s.client, &namespace, &name).await;
    page(&app, &id, &s, &params, None, view)
}

async fn policies(State(app): Shared, headers: HeaderMap, Query(params): Params) -> Response {
    let Some((id, s)) = app.sessions.of_request(&headers) else {
        return to_login();
    };
    let view = views::policies::render(&s.client, params.get("continue").map(String::as_str)).await;
    page(&app, &id, &s, &params, Some("/policies"), view)
}

async fn failover(State(app): Shared, headers: HeaderMap, Query(params): Params) -> Response {
    let Some((id, s)) = app.sessions.of_request(&headers) else {
        return to_login();
    };
    let view = views::failover::render(&s.client).await;
    page(&app, &id, &s, &params, None, view)
}

async fn services(State(app): Shared, headers: HeaderMap, Query(params): Params) -> Response {
    let Some((id, s)) = app.sessions.of_request(&headers) else {
        return to_login();
    };
    let view = views::services::render(&s.client).await;
    page(&app, &id, &s, &params, None, view)
}

async fn overrides(State(app): Shared, headers: HeaderMap, Query(params): Params) -> Response {
    let Some((id, s)) = app.sessions.of_request(&headers) else {
        return to_login();
    };
    let view = views::overrides::render(&s.client).await;
    page(&app, &id, &s, &params, None, view)
}

async fn live_events(
    State(app): Shared,
    headers: HeaderMap,
    Path(view): Path<String>,
    Query(params): Params,
) -> Response {
    let Some((_, s)) = app.sessions.of_request(&headers) else {
        return StatusCode::UNAUTHORIZED.into_response();
    };
    let param = |key: &str| params.get(key).map(String::as_str).unwrap_or("");
    match live::watched(&view, param("namespace"), param("binding")) {
        Some(collections) => {
            live::stream(s.client.clone(), collections, app.cancel.clone()).into_response()
        }
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

fn static_page(session: &Session, title: &str, content: &str, status: StatusCode) -> Response {
    let page = Page {
        title,
        user: Some(&session.user),
        csrf: Some(&session.csrf),
        live: None,
    };
    respond(status, layout(&page, content))
}

async fn cordon_confirm(
    State(app): Shared,
    headers: HeaderMap,
    Path(name): Path<String>,
    Query(params): Params,
) -> Response {
    let Some((_, s)) = app.sessions.of_request(&headers) else {
        return to_login();
    };
    let action = if params.get("action").map(String::as_str) == Some("uncordon") {
        "uncordon"
    } else {
        "cordon"
    };
    let question = format!(
        "{} cluster {name}? ({})",
        capitalize(action),
        match action {
            "cordon" => "new workloads will not be scheduled there",
            _ => "new workloads may be scheduled there again",
        }
    );
    let url = format!("/clusters/{}/cordon", crate::html::query_value(&name));
    let content = actions::confirm(
        &url,
        &question,
        &[("action", action)],
        &s.csrf,
        &capitalize(action),
    );
    static_page(&s, "Confirm", &content, StatusCode::OK)
}

async fn cordon(
    State(app): Shared,
    headers: HeaderMap,
    Path(name): Path<String>,
    body: Bytes,
) -> Response {
    let Some((id, s)) = app.sessions.of_request(&headers) else {
        return to_login();
    };
    let Some(form) = checked_form(&s, &body) else {
        return refused(&s);
    };
    let result = actions::cordon(
        &s.client,
        &name,
        form.get("action").map(String::as_str) != Some("uncordon"),
    )
    .await;
    action_outcome(&app, &id, &s, result)
}

async fn delete_policy_confirm(
    State(app): Shared,
    headers: HeaderMap,
    Query(params): Params,
) -> Response {
    let Some((_, s)) = app.sessions.of_request(&headers) else {
        return to_login();
    };
    let namespace = params.get("namespace").cloned().unwrap_or_default();
    let name = params.get("name").cloned().unwrap_or_default();
    let question = if namespace.is_empty() {
        format!(
            "Delete ClusterPropagationPolicy {name}? The resources it claims are no longer propagated by it."
        )
    } else {
        format!(
            "Delete PropagationPolicy {namespace}/{name}? The resources it claims are no longer propagated by it."
        )
    };
    let fields = [("namespace", namespace.as_str()), ("name", name.as_str())];
    let content = actions::confirm("/policies/delete", &question, &fields, &s.csrf, "Delete");
    static_page(&s, "Confirm", &content, StatusCode::OK)
}

async fn delete_policy(State(app): Shared, headers: HeaderMap, body: Bytes) -> Response {
    let Some((id, s)) = app.sessions.of_request(&headers) else {
        return to_login();
    };
    let Some(form) = checked_form(&s, &body) else {
        return refused(&s);
    };
    let field = |k: &str| form.get(k).cloned().unwrap_or_default();
    let result = actions::delete_policy(&s.client, &field("namespace"), &field("name")).await;
    action_outcome(&app, &id, &s, result)
}

/// The taint page of a cluster, or (with `?spec=`) the confirmation of that change; a malformed spec shows
/// the page again saying what is accepted.
async fn taint_page(
    State(app): Shared,
    headers: HeaderMap,
    Path(name): Path<String>,
    Query(params): Params,
) -> Response {
    let Some((id, s)) = app.sessions.of_request(&headers) else {
        return to_login();
    };
    let spec = params.get("spec").map(|v| v.trim()).unwrap_or("");
    let mut refusal = None;
    if !spec.is_empty() {
        match actions::taint_question(&name, spec) {
            Ok(question) => {
                let overwrite = if params.contains_key("overwrite") {
                    "1"
                } else {
                    ""
                };
                let url = format!("/clusters/{}/taint", crate::html::query_value(&name));
                let fields = [("spec", spec), ("overwrite", overwrite)];
                let button = if spec.ends_with('-') {
                    "Remove taint"
                } else {
                    "Taint"
                };
                let content = actions::confirm(&url, &question, &fields, &s.csrf, button);
                return static_page(&s, "Confirm", &content, StatusCode::OK);
            }
            Err(error) => refusal = Some(error.to_string()),
        }
    }
    let view = crate::api::get(&s.client, &crate::api::paths::cluster(&name))
        .await
        .map(|cluster| {
            let mut content = String::new();
            if let Some(why) = &refusal {
                content.push_str(&format!(
                    "<p class=\"error\" id=\"action-error\">{}</p>",
                    crate::html::esc(why)
                ));
            }
            content.push_str(&actions::taint_form(&cluster));
            View {
                title: format!("Taints of {name}"),
                content,
                live: None,
            }
        });
    let refused = refusal.is_some();
    let mut response = page(&app, &id, &s, &params, None, view);
    if refused && response.status() == StatusCode::OK {
        *response.status_mut() = StatusCode::UNPROCESSABLE_ENTITY;
    }
    response
}

async fn taint(
    State(app): Shared,
    headers: HeaderMap,
    Path(name): Path<String>,
    body: Bytes,
) -> Response {
    let Some((id, s)) = app.sessions.of_request(&headers) else {
        return to_login();
    };
    let Some(form) = checked_form(&s, &body) else {
        return refused(&s);
    };
    let spec = form.get("spec").cloned().unwrap_or_default();
    let overwrite = form.get("overwrite").is_some_and(|v| !v.is_empty());
    let result = actions::taint(&s.client, &name, &spec, overwrite, jiff::Timestamp::now()).await;
    action_outcome(&app, &id, &s, result)
}

/// The promote form, or (with `?confirm=1`) the confirmation of the request it filled in.
async fn promote_page(State(app): Shared, headers: HeaderMap, Query(params): Params) -> Response {
    let Some((id, s)) = app.sessions.of_request(&headers) else {
        return to_login();
    };
    let field = |k: &str| params.get(k).cloned().unwrap_or_default();
    let mut refusal = None;
    if params.contains_key("confirm") {
        match actions::PromoteRequest::from_fields(field) {
            Ok(request) => {
                let content = actions::confirm(
                    "/promote",
                    &request.question(),
                    &request.fields(),
                    &s.csrf,
                    "Promote",
                );
                return static_page(&s, "Confirm", &content, StatusCode::OK);
            }
            Err(error) => refusal = Some(error.to_string()),
        }
    }
    let clusters = crate::api::list_page(&s.client, crate::api::paths::CLUSTERS, 500, None).await;
    let request = actions::PromoteRequest {
        cluster: field("cluster"),
        api_version: field("apiVersion"),
        kind: field("kind"),
        namespace: field("namespace"),
        name: field("name"),
    };
    let view = clusters.map(|clusters| {
        let names: Vec<String> = clusters
            .items
            .iter()
            .map(|c| crate::api::text(c, "/metadata/name").to_string())
            .collect();
        let mut content = String::new();
        if let Some(why) = &refusal {
            content.push_str(&format!(
                "<p class=\"error\" id=\"action-error\">{}</p>",
                crate::html::esc(why)
            ));
        }
        content.push_str(&actions::promote_form(&names, &request));
        View {
            title: "Promote".into(),
            content,
            live: None,
        }
    });
    let refused = refusal.is_some();
    let mut response = page(&app, &id, &s, &params, None, view);
    if refused && response.status() == StatusCode::OK {
        *response.status_mut() = StatusCode::UNPROCESSABLE_ENTITY;
    }
    response
}

async fn promote(State(app): Shared, headers: HeaderMap, body: Bytes) -> Response {
    let Some((id, s)) = app.sessions.of_request(&headers) else {
        return to_login();
    };
    let Some(form) = checked_form(&s, &body) else {
        return refused(&s);
    };
    let result =
        match actions::PromoteRequest::from_fields(|k| form.get(k).cloned().unwrap_or_default()) {
            Ok(request) => actions::promote(&s.client, &request).await,
            Err(error) => Err(error),
        };
    action_outcome(&app, &id, &s, result)
}

fn action_outcome(app: &App, id: &str, s: &Session, result: Result<String, ApiError>) -> Response {
    let status = match &result {
        Ok(_) => StatusCode::OK,
        Err(ApiError::Unauthorized(_)) => return end_session(app, id),
        Err(ApiError::Forbidden(_)) => StatusCode::FORBIDDEN,
        Err(ApiError::NotFound(_)) => StatusCode::NOT_FOUND,
        Err(ApiError::Invalid(_)) => StatusCode::UNPROCESSABLE_ENTITY,
        Err(_) => StatusCode::BAD_GATEWAY,
    };
    static_page(s, "Result", &actions::outcome(&result), status)
}

/// The form fields of a POST, `None` unless it carries the session's CSRF token (and fits).
fn checked_form(s: &Session, body: &Bytes) -> Option<HashMap<String, String>> {
    let form = parse_form(body)?;
    match form.get("csrf") {
        Some(token) if same_secret(token, &s.csrf) => Some(form),
        _ => None,
    }
}

fn refused(s: &Session) -> Response {
    static_page(
        s,
        "Refused",
        "<p class=\"error\" id=\"action-error\">The form is stale or did not come from this dashboard (CSRF \
         token mismatch); reload the page and try again.</p>",
        StatusCode::FORBIDDEN,
    )
}

fn parse_form(body: &Bytes) -> Option<HashMap<String, String>> {
    (body.len() <= MAX_FORM).then(|| form_urlencoded::parse(body).into_owned().collect())
}

fn capitalize(word: &str) -> String {
    let mut chars = word.chars();
    chars
        .next()
        .map(|first| first.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

async fn login_page(Query(params): Params) -> Response {
    let notice = params
        .contains_key("ended")
        .then_some("Your session ended: the API server refused the credentials (wrong or expired token, or a deleted ServiceAccount). Log in again.");
    login_form(notice, None, StatusCode::OK)
}

fn login_form(notice: Option<&str>, error: Option<&str>, status: StatusCode) -> Response {
    let page = Page {
        title: "Log in",
        user: None,
        csrf: None,
        live: None,
    };
    respond(status, layout(&page, &views::login::form(notice, error)))
}

async fn login(State(app): Shared, body: Bytes) -> Response {
    let Some(form) = parse_form(&body) else {
        return login_form(
            None,
            Some("the form is too large"),
            StatusCode::PAYLOAD_TOO_LARGE,
        );
    };
    let token = form.get("token").map(|t| t.trim()).unwrap_or("");
    let kubeconfig = form.get("kubeconfig").map(|k| k.trim()).unwrap_or("");
    let credentials = if token.is_empty() && !kubeconfig.is_empty() {
        Credentials::Kubeconfig(kubeconfig.to_string())
    } else {
        Credentials::Token(token.to_string())
    };
    let client = match app.control_plane.client(credentials) {
        Ok(client) => client,
        Err(error) => return login_form(None, Some(&error.to_string()), StatusCode::BAD_REQUEST),
    };
    let user = match whoami(&client).await {
        Ok(user) => user,
        Err(ApiError::Unauthorized(_)) => {
            return login_form(
                None,
                Some(
                    "The API server refused these credentials (401 Unauthorized): the token is wrong or expired, or its ServiceAccount was deleted.",
                ),
                StatusCode::UNAUTHORIZED,
            );
        }
        Err(error) => {
            let error = LoginError::Api(error);
            return login_form(None, Some(&error.to_string()), StatusCode::BAD_GATEWAY);
        }
    };
    let id = app.sessions.create(user, client);
    let mut response = Redirect::to("/").into_response();
    if let Ok(cookie) = HeaderValue::from_str(&set_cookie(&id)) {
        response.headers_mut().insert(header::SET_COOKIE, cookie);
    }
    response
}

async fn logout(State(app): Shared, headers: HeaderMap, body: Bytes) -> Response {
    let Some((id, s)) = app.sessions.of_request(&headers) else {
        return Redirect::to("/login").into_response();
    };
    if checked_form(&s, &body).is_none() {
        return refused(&s);
    }
    app.sessions.end(&id);
    let mut response = Redirect::to("/login").into_response();
    if let Ok(cookie) = HeaderValue::from_str(&set_cookie("")) {
        response.headers_mut().insert(header::SET_COOKIE, cookie);
    }
    response
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use axum::body::Body;
    use http::Request;
    use tower::ServiceExt;

    fn app() -> Arc<App> {
        let config = kube::Config::new("https://127.0.0.1:1".parse().unwrap());
        Arc::new(App {
            control_plane: ControlPlane::new(config),
            sessions: Sessions::default(),
            cancel: CancellationToken::new(),
        })
    }

    async fn send(app: &Arc<App>, request: Request<Body>) -> (StatusCode, HeaderMap, String) {
        let response = router(app.clone()).oneshot(request).await.unwrap();
        let (parts, body) = response.into_parts();
        let bytes = axum::body::to_bytes(body, usize::MAX).await.unwrap();
        (
            parts.status,
            parts.headers,
            String::from_utf8_lossy(&bytes).into_owned(),
        )
    }

    #[tokio::test]
    async fn without_a_session_pages_go_to_login_and_live_is_refused() {
        let app = app();
        let (status, headers, _) = send(&app, Request::get("/").body(Body::empty()).unwrap()).await;
        assert_eq!(status, StatusCode::SEE_OTHER);
        assert_eq!(headers[header::LOCATION], "/login");
        let (status, _, _) = send(
            &app,
            Request::get("/live/overview").body(Body::empty()).unwrap(),
        )
        .await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        let (status, headers, body) = send(
            &app,
            Request::get("/login?ended=1").body(Body::empty()).unwrap(),
        )
        .await;
        assert_eq!(status, StatusCode::OK);
        assert!(body.contains("session ended"), "{body}");
        assert!(
            headers[header::CONTENT_SECURITY_POLICY]
                .to_str()
                .unwrap()
                .contains("default-src 'self'")
        );
    }

    #[tokio::test]
    async fn actions_without_the_csrf_token_are_refused() {
        let app = app();
        let client = app
            .control_plane
            .client(crate::control_plane::Credentials::Token("t".into()))
            .unwrap();
        let id = app.sessions.create("alice".into(), client);
        let cookie = format!("{}={id}", crate::session::COOKIE);
        for body in ["action=cordon", "action=cordon&csrf=forged"] {
            let request = Request::post("/clusters/m1/cordon")
                .header(header::COOKIE, &cookie)
                .body(Body::from(body))
                .unwrap();
            let (status, _, page) = send(&app, request).await;
            assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
            assert!(page.contains("CSRF"), "{page}");
        }
        // The confirmation page carries the session's token.
        let request = Request::get("/clusters/m1/cordon?action=uncordon")
            .header(header::COOKIE, &cookie)
            .body(Body::empty())
            .unwrap();
        let (_, _, page) = send(&app, request).await;
        let csrf = app.sessions.of_request(&{
            let mut h = HeaderMap::new();
            h.insert(header::COOKIE, cookie.parse().unwrap());
            h
        });
        assert!(
            page.contains(&csrf.unwrap().1.csrf) && page.contains("Uncordon cluster m1?"),
            "{page}"
        );
    }

    /// A stand-in API server over plain HTTP: token `expired` is refused (401) as an expired or deleted
    /// ServiceAccount's token is; for token `good` a list with a `continue` token answers 410 Gone as after a
    /// compaction, and everything else is one Cluster or an empty list.
    async fn fake_api() -> String {
        use axum::extract::RawQuery;
        async fn answer(headers: HeaderMap, RawQuery(query): RawQuery) -> Response {
            let status = |code: u16, reason: &str, message: &str| {
                let body = serde_json::json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                    "code": code, "reason": reason, "message": message});
                let mut response =
                    (StatusCode::from_u16(code).unwrap(), body.to_string()).into_response();
                response.headers_mut().insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                );
                response
            };
            let auth = headers
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("");
            if auth != "Bearer good" {
                return status(401, "Unauthorized", "Unauthorized");
            }
            if query.unwrap_or_default().contains("continue=") {
                return status(
                    410,
                    "Expired",
                    "The provided continue parameter is too old to display a consistent list result.",
                );
            }
            let body = serde_json::json!({"kind": "List", "metadata": {}, "items": [],
                "metadata": {"name": "member1"}, "spec": {"taints": []}});
            let mut response = body.to_string().into_response();
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            response
        }
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move {
            axum::serve(listener, Router::new().fallback(answer))
                .await
                .unwrap();
        });
        format!("http://{address}")
    }

    /// A dashboard in front of the stand-in, with a session for `token`; returns it and the session cookie.
    async fn against_fake(token: &str) -> (Arc<App>, String) {
        let config = kube::Config::new(fake_api().await.parse().unwrap());
        let app = Arc::new(App {
            control_plane: ControlPlane::new(config),
            sessions: Sessions::default(),
            cancel: CancellationToken::new(),
        });
        let client = app
            .control_plane
            .client(crate::control_plane::Credentials::Token(token.into()))
            .unwrap();
        let id = app.sessions.create("alice".into(), client);
        (app, format!("{}={id}", crate::session::COOKIE))
    }

    fn get(path: &str, cookie: &str) -> Request<Body> {
        Request::get(path)
            .header(header::COOKIE, cookie)
            .body(Body::empty())
            .unwrap()
    }

    #[tokio::test]
    async fn a_stale_continue_link_offers_the_first_page_not_an_error() {
        let (app, cookie) = against_fake("good").await;
        for (path, first) in [
            ("/?continue=stale", "/"),
            ("/policies?continue=stale", "/policies"),
        ] {
            let (status, _, page) = send(&app, get(path, &cookie)).await;
            assert_eq!(status, StatusCode::OK, "{path}: {page}");
            assert!(page.contains("id=\"stale-list\""), "{path}: {page}");
            assert!(
                page.contains(&format!(
                    "id=\"restart-list\" class=\"button\" href=\"{first}\""
                )),
                "{path}: {page}"
            );
            assert!(!page.contains("too old"), "no raw API error: {page}");
        }
        // Without a continue token the same list renders.
        let (status, _, page) = send(&app, get("/", &cookie)).await;
        assert_eq!(status, StatusCode::OK, "{page}");
        assert!(page.contains("id=\"clusters\""), "{page}");
    }

    #[tokio::test]
    async fn an_expired_token_ends_the_session_with_a_clear_page() {
        let (app, cookie) = against_fake("expired").await;
        for path in [
            "/",
            "/services",
            "/overrides",
            "/failover",
            "/clusters/member1/taint",
        ] {
            let (status, headers, _) = send(&app, get(path, &cookie)).await;
            assert_eq!(status, StatusCode::SEE_OTHER, "{path}");
            let location = headers[header::LOCATION].to_str().unwrap().to_string();
            assert!(
                location == "/login?ended=1" || location == "/login",
                "{path}: {location}"
            );
        }
        assert!(
            app.sessions
                .of_request(&{
                    let mut h = HeaderMap::new();
                    h.insert(header::COOKIE, cookie.parse().unwrap());
                    h
                })
                .is_none(),
            "the session is gone"
        );
        let (_, _, page) = send(
            &app,
            Request::get("/login?ended=1").body(Body::empty()).unwrap(),
        )
        .await;
        assert!(
            page.contains("Your session ended") && page.contains("expired token"),
            "{page}"
        );
    }

    #[tokio::test]
    async fn a_malformed_taint_shows_the_accepted_form_and_a_good_one_asks_first() {
        let (app, cookie) = against_fake("good").await;
        let (status, _, page) = send(
            &app,
            get("/clusters/member1/taint?spec=dedicated%3Dgpu", &cookie),
        )
        .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{page}");
        assert!(page.contains("KEY[=VALUE]:EFFECT"), "{page}");
        assert!(
            page.contains("id=\"spec\""),
            "the form is shown again: {page}"
        );
        let (status, _, page) = send(
            &app,
            get(
                "/clusters/member1/taint?spec=dedicated%3Dgpu%3ANoSchedule",
                &cookie,
            ),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{page}");
        assert!(
            page.contains("Taint cluster member1 with dedicated=gpu:NoSchedule?")
                && page.contains("name=\"csrf\""),
            "{page}"
        );
        let (status, _, page) =
            send(&app, get("/promote?confirm=1&cluster=member1", &cookie)).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{page}");
        assert!(
            page.contains("promote needs apiVersion, kind, name"),
            "{page}"
        );
    }

    #[tokio::test]
    async fn assets_are_embedded() {
        let app = app();
        let (status, headers, body) = send(
            &app,
            Request::get("/assets/app.js").body(Body::empty()).unwrap(),
        )
        .await;
        assert_eq!(status, StatusCode::OK);
        assert!(
            headers[header::CONTENT_TYPE]
                .to_str()
                .unwrap()
                .starts_with("text/javascript")
        );
        assert!(body.contains("EventSource"));
    }
}
