//! A resource request after authorization: a table picks the handler from the verb and the
//! subresource, and one small function per handler decodes what it needs and calls the store
//! handlers in `handlers`.
//!
//! Resources served by a provider (`provided`, e.g. metrics) answer only get and list, from
//! their own table.

use std::sync::Arc;

use apimachinery::{ApiError, ResourceDef};
use apiserver_auth::UserInfo;
use axum::body::Body;
use axum::response::{IntoResponse, Response};
use http::{StatusCode, header};
use serde_json::{Value, json};

use super::{Ctx, Target, is_csr, read_body};
use crate::content::{self, Include, Output};
use crate::handlers::delete::{DeleteOptions, delete_collection, delete_object};
use crate::handlers::read::{ListParams, get_object, list_objects, list_objects_json};
use crate::handlers::scale::{get_scale, patch_scale, update_scale};
use crate::handlers::update::{finalize_namespace, patch_object, update_object};
use crate::handlers::{
    FieldValidation, WriteOptions, create::create_object, event_list, parse_dry_run, token_request,
};
use crate::hooks::{self, PatchType};
use crate::objects::Part;
use crate::provided::ProvidedResources;
use crate::respond::{json_response, render, render_list, written_response};
use crate::server::ApiServer;
use crate::watch::{self, Render, WatchParams};

/// What the subresource must be for a row to match.
#[derive(Clone, Copy, Debug)]
enum Sub {
    /// The object itself.
    None,
    Is(&'static str),
    /// The object or any subresource.
    Any,
}

impl Sub {
    fn matches(self, sub: Option<&str>) -> bool {
        match self {
            Sub::None => sub.is_none(),
            Sub::Is(wanted) => sub == Some(wanted),
            Sub::Any => true,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Handler {
    Get,
    GetScale,
    List,
    Watch,
    Create,
    CreateToken,
    Update(Part),
    UpdateScale,
    Finalize,
    Patch(Part),
    PatchScale,
    /// PATCH on a subresource that takes none: refused after the body is checked, as before.
    PatchUnsupported,
    Delete,
    DeleteCollection,
    ProvidedGet,
    ProvidedList,
}

/// Stored resources: the first row whose verb and subresource match serves the request.
const ROUTES: &[(&str, Sub, Handler)] = &[
    ("get", Sub::Is("scale"), Handler::GetScale),
    ("get", Sub::Any, Handler::Get),
    ("list", Sub::Any, Handler::List),
    ("watch", Sub::Any, Handler::Watch),
    ("create", Sub::Is("token"), Handler::CreateToken),
    ("create", Sub::Any, Handler::Create),
    ("update", Sub::Is("scale"), Handler::UpdateScale),
    ("update", Sub::Is("finalize"), Handler::Finalize),
    ("update", Sub::Is("status"), Handler::Update(Part::Status)),
    ("update", Sub::Is("approval"), Handler::Update(Part::Status)),
    ("update", Sub::Any, Handler::Update(Part::Main)),
    ("patch", Sub::Is("scale"), Handler::PatchScale),
    ("patch", Sub::Is("status"), Handler::Patch(Part::Status)),
    ("patch", Sub::Is("approval"), Handler::Patch(Part::Status)),
    ("patch", Sub::None, Handler::Patch(Part::Main)),
    ("patch", Sub::Any, Handler::PatchUnsupported),
    ("delete", Sub::Any, Handler::Delete),
    ("deletecollection", Sub::Any, Handler::DeleteCollection),
];

/// Provided (read-only) resources.
const PROVIDED_ROUTES: &[(&str, Sub, Handler)] = &[
    ("get", Sub::None, Handler::ProvidedGet),
    ("list", Sub::None, Handler::ProvidedList),
];

fn route(table: &[(&str, Sub, Handler)], verb: &str, sub: Option<&str>) -> Option<Handler> {
    table
        .iter()
        .find(|(v, s, _)| *v == verb && s.matches(sub))
        .map(|(_, _, handler)| *handler)
}

/// One resource request, as every handler sees it.
struct Req<'a> {
    server: &'a Arc<ApiServer>,
    ctx: &'a Ctx,
    def: Arc<ResourceDef>,
    ns: Option<&'a str>,
    name: &'a str,
    output: Output,
    include: Include,
    user: &'a UserInfo,
}

pub(super) async fn resource(
    server: &Arc<ApiServer>,
    ctx: &Ctx,
    target: Target,
    verb: &str,
    body: Body,
    user: &UserInfo,
) -> Result<Response, ApiError> {
    let def = Arc::clone(&target.def);
    let sub = target.sub.as_deref();
    let output = if matches!(verb, "get" | "list" | "watch") {
        content::negotiate(ctx.header(header::ACCEPT))?
    } else {
        Output::Json
    };
    let include = Include::parse(ctx.q("includeObject").as_deref())?;
    let provider = server.provider_of(&def);
    let table = if provider.is_some() {
        PROVIDED_ROUTES
    } else {
        ROUTES
    };
    let Some(handler) = route(table, verb, sub) else {
        return Err(match provider {
            Some(_) => ApiError::method_not_allowed(format!(
                "{} is read-only: only get and list are served ({verb})",
                def.group_resource()
            )),
            None => ApiError::method_not_allowed("unsupported verb"),
        });
    };
    let req = Req {
        server,
        ctx,
        def,
        ns: target.namespace.as_deref(),
        name: target.name.as_deref().unwrap_or_default(),
        output,
        include,
        user,
    };
    match handler {
        Handler::Get => get(&req, false).await,
        Handler::GetScale => get(&req, true).await,
        Handler::List => list(&req).await,
        Handler::Watch => watch(&req).await,
        Handler::Create => create(&req, body).await,
        Handler::CreateToken => create_token(&req, body).await,
        Handler::Update(part) => update(&req, body, Some(part)).await,
        Handler::UpdateScale => update(&req, body, None).await,
        Handler::Finalize => finalize(&req, body).await,
        Handler::Patch(part) => patch(&req, body, Some(part)).await,
        Handler::PatchScale => patch(&req, body, None).await,
        Handler::PatchUnsupported => {
            patch_input(&req, body).await?;
            Err(ApiError::method_not_allowed(
                "PATCH is not supported on this subresource",
            ))
        }
        Handler::Delete | Handler::DeleteCollection => {
            delete(&req, body, handler == Handler::DeleteCollection).await
        }
        Handler::ProvidedGet | Handler::ProvidedList => match provider {
            Some(provider) => provided(&req, provider, handler == Handler::ProvidedList).await,
            None => Err(ApiError::internal("a provided route without a provider")),
        },
    }
}

async fn get(req: &Req<'_>, scale: bool) -> Result<Response, ApiError> {
    let (server, def) = (req.server, &req.def);
    let object = if scale {
        get_scale(server, def, req.ns, req.name).await?
    } else {
        get_object(server, def, req.ns, req.name).await?
    };
    Ok(render(
        def,
        StatusCode::OK,
        object,
        req.output,
        req.include,
        &[],
    ))
}

async fn list(req: &Req<'_>) -> Result<Response, ApiError> {
    let params = ListParams::parse(&req.def.kind, |k| req.ctx.q(k))?;
    if matches!(req.output, Output::Json) {
        let body = list_objects_json(req.server, &req.def, req.ns, &params).await?;
        return Ok((
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json")],
            body,
        )
            .into_response());
    }
    let list = list_objects(req.server, &req.def, req.ns, &params).await?;
    Ok(render_list(&req.def, list, req.output, req.include))
}

async fn watch(req: &Req<'_>) -> Result<Response, ApiError> {
    let params = WatchParams::parse(&req.def.kind, |k| req.ctx.q(k))?;
    let render = Render {
        def: Arc::clone(&req.def),
        output: req.output,
        include: req.include,
    };
    let stream = watch::open(Arc::clone(req.server), req.ns, params, render).await?;
    Ok(Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::CACHE_CONTROL, "no-cache, private")
        .body(Body::from_stream(stream))
        .map_err(|e| ApiError::internal(e.to_string()))?
        .into_response())
}

async fn provided(
    req: &Req<'_>,
    provider: &dyn ProvidedResources,
    list: bool,
) -> Result<Response, ApiError> {
    if list {
        let params = ListParams::parse(&req.def.kind, |k| req.ctx.q(k))?;
        let list = crate::provided::list(provider, req.server, &req.def, req.ns, &params).await?;
        Ok(render_list(&req.def, list, req.output, req.include))
    } else {
        let object = crate::provided::get(provider, req.server, &req.def, req.ns, req.name).await?;
        Ok(render(
            &req.def,
            StatusCode::OK,
            object,
            req.output,
            req.include,
            &[],
        ))
    }
}

async fn create(req: &Req<'_>, body: Body) -> Result<Response, ApiError> {
    let bytes = read_body(req.server, req.ctx, body).await?;
    let mut decoded = content::decode_body(req.ctx.header(header::CONTENT_TYPE), &bytes, &req.def)?;
    if event_list::is_event_list_create(&req.def, req.ns) {
        // Repeated fields are reported per object; a list's paths would not name its items.
        let options = write_options(req.ctx, Vec::new())?;
        let status =
            event_list::create_event_list(req.server, &req.def, decoded.value, &options).await?;
        return Ok(json_response(StatusCode::CREATED, &status.to_value(), &[]));
    }
    if is_csr(&req.def) {
        apiserver_auth::csr::stamp_requestor(&mut decoded.value, req.user);
    }
    let options = write_options(req.ctx, decoded.duplicate_fields)?;
    let written = create_object(req.server, &req.def, req.ns, decoded.value, &options).await?;
    Ok(written_response(written))
}

async fn create_token(req: &Req<'_>, body: Body) -> Result<Response, ApiError> {
    let decoded = optional_body(req, body).await?;
    let answer = token_request::create_token(
        req.server,
        &req.def,
        req.ns.unwrap_or_default(),
        req.name,
        decoded,
    )
    .await?;
    Ok(json_response(StatusCode::CREATED, &answer, &[]))
}

/// PUT of the object (`Part::Main`), its status (`Part::Status`) or, with no part, its scale.
async fn update(req: &Req<'_>, body: Body, part: Option<Part>) -> Result<Response, ApiError> {
    let bytes = read_body(req.server, req.ctx, body).await?;
    let decoded = content::decode_body(req.ctx.header(header::CONTENT_TYPE), &bytes, &req.def)?;
    let options = write_options(req.ctx, decoded.duplicate_fields)?;
    let (server, def, ns, name) = (req.server, &req.def, req.ns, req.name);
    let written = match part {
        None => update_scale(server, def, ns, name, &decoded.value, &options).await?,
        Some(part) => update_object(server, def, ns, name, decoded.value, part, &options).await?,
    };
    Ok(written_response(written))
}

async fn finalize(req: &Req<'_>, body: Body) -> Result<Response, ApiError> {
    let bytes = read_body(req.server, req.ctx, body).await?;
    let decoded = content::decode_body(req.ctx.header(header::CONTENT_TYPE), &bytes, &req.def)?;
    let options = write_options(req.ctx, decoded.duplicate_fields)?;
    let written =
        finalize_namespace(req.server, &req.def, req.name, decoded.value, &options).await?;
    Ok(written_response(written))
}

/// The body, its patch type and the write options of a PATCH.
async fn patch_input(
    req: &Req<'_>,
    body: Body,
) -> Result<(bytes::Bytes, PatchType, WriteOptions), ApiError> {
    let bytes = read_body(req.server, req.ctx, body).await?;
    let content_type = req.ctx.header(header::CONTENT_TYPE).unwrap_or_default();
    let kind = PatchType::from_content_type(content_type).ok_or_else(|| {
        ApiError::unsupported_media_type(format!(
            "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml{}",
            if req.def.builtin { ", application/strategic-merge-patch+json" } else { "" }
        ))
    })?;
    let mut options = write_options(req.ctx, Vec::new())?;
    if kind == PatchType::Apply && req.ctx.q("fieldManager").is_none_or(|m| m.is_empty()) {
        // Apply has no default manager: kube-apiserver requires one.
        options.field_manager.clear();
    }
    Ok((bytes, kind, options))
}

/// PATCH of the object, its status or (no part) its scale.
async fn patch(req: &Req<'_>, body: Body, part: Option<Part>) -> Result<Response, ApiError> {
    let (bytes, kind, options) = patch_input(req, body).await?;
    let (server, def, ns, name) = (req.server, &req.def, req.ns, req.name);
    let written = match part {
        None => patch_scale(server, def, ns, name, kind, &bytes, &options).await?,
        Some(part) => patch_object(server, def, ns, name, kind, &bytes, part, &options).await?,
    };
    Ok(written_response(written))
}

async fn delete(req: &Req<'_>, body: Body, collection: bool) -> Result<Response, ApiError> {
    let body_value = optional_body(req, body).await?;
    let query = |k: &str| req.ctx.q(k);
    let options = DeleteOptions::parse(&body_value, query)?;
    if collection {
        let params = ListParams::parse(&req.def.kind, query)?;
        let list = delete_collection(req.server, &req.def, req.ns, &params, &options).await?;
        Ok(json_response(StatusCode::OK, &list, &[]))
    } else {
        let written = delete_object(req.server, &req.def, req.ns, req.name, &options).await?;
        Ok(written_response(written))
    }
}

/// A body that may be empty (delete options, TokenRequest): empty means `{}`.
async fn optional_body(req: &Req<'_>, body: Body) -> Result<Value, ApiError> {
    let bytes = read_body(req.server, req.ctx, body).await?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        Ok(json!({}))
    } else {
        Ok(content::decode_body(req.ctx.header(header::CONTENT_TYPE), &bytes, &req.def)?.value)
    }
}

fn write_options(ctx: &Ctx, duplicate_fields: Vec<String>) -> Result<WriteOptions, ApiError> {
    let field_manager = ctx
        .q("fieldManager")
        .filter(|m| !m.is_empty())
        .unwrap_or_else(|| hooks::default_field_manager(ctx.header(header::USER_AGENT)));
    Ok(WriteOptions {
        dry_run: parse_dry_run(ctx.q("dryRun").as_deref())?,
        field_manager,
        field_validation: FieldValidation::parse(ctx.q("fieldValidation").as_deref())?,
        force: ctx.q("force").is_some_and(|f| f == "true"),
        duplicate_fields,
        apply: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_verb_and_subresource_reaches_its_handler() {
        let cases: &[(&str, Option<&str>, Option<Handler>)] = &[
            ("get", None, Some(Handler::Get)),
            ("get", Some("scale"), Some(Handler::GetScale)),
            ("get", Some("status"), Some(Handler::Get)),
            ("list", None, Some(Handler::List)),
            ("watch", None, Some(Handler::Watch)),
            ("create", None, Some(Handler::Create)),
            ("create", Some("token"), Some(Handler::CreateToken)),
            ("create", Some("eviction"), Some(Handler::Create)),
            ("update", None, Some(Handler::Update(Part::Main))),
            (
                "update",
                Some("status"),
                Some(Handler::Update(Part::Status)),
            ),
            (
                "update",
                Some("approval"),
                Some(Handler::Update(Part::Status)),
            ),
            ("update", Some("scale"), Some(Handler::UpdateScale)),
            ("update", Some("finalize"), Some(Handler::Finalize)),
            ("patch", None, Some(Handler::Patch(Part::Main))),
            ("patch", Some("status"), Some(Handler::Patch(Part::Status))),
            ("patch", Some("scale"), Some(Handler::PatchScale)),
            ("patch", Some("finalize"), Some(Handler::PatchUnsupported)),
            ("delete", None, Some(Handler::Delete)),
            ("deletecollection", None, Some(Handler::DeleteCollection)),
            ("connect", None, None),
        ];
        for (verb, sub, expected) in cases {
            assert_eq!(route(ROUTES, verb, *sub), *expected, "{verb} {sub:?}");
        }
    }

    #[test]
    fn provided_resources_serve_only_get_and_list_of_the_object() {
        assert_eq!(
            route(PROVIDED_ROUTES, "get", None),
            Some(Handler::ProvidedGet)
        );
        assert_eq!(
            route(PROVIDED_ROUTES, "list", None),
            Some(Handler::ProvidedList)
        );
        for (verb, sub) in [("get", Some("scale")), ("create", None), ("watch", None)] {
            assert_eq!(route(PROVIDED_ROUTES, verb, sub), None, "{verb} {sub:?}");
        }
    }
}
