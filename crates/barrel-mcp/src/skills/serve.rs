//! Serving a catalog: [`ServerBuilder::skills`] adds every skill file as a resource, answers
//! `skills/list`, `skills/get` and (when enabled) `resources/directory/read` with custom
//! request handlers, and declares the extension.

use std::sync::Arc;

use barrel_mcp_types::skills::{
    DIRECTORY_READ_SETTING, GetSkillParams, GetSkillResult, ListSkillsParams, ListSkillsResult,
    RESOURCES_DIRECTORY_READ, ReadDirectoryParams, ReadDirectoryResult, SKILLS_EXTENSION,
    SKILLS_GET, SKILLS_LIST,
};
use barrel_mcp_types::{ErrorObject, JsonObject, ResourceContents, Shape};
use base64::Engine as _;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::catalog::Catalog;
use super::source::SkillsSource;
use crate::server::cursor::paginate;
use crate::server::{Ctx, ResourceRequest, ServerBuilder};

impl ServerBuilder {
    /// Serves the skills of `source` (SEP-2640, `io.modelcontextprotocol/skills`): each file as
    /// a `skill://` resource (a `SKILL.md` named and described by its front matter), the
    /// `skills/list` and `skills/get` methods, `resources/directory/read` unless
    /// [`SkillsConfig::directory_read`](super::SkillsConfig::directory_read) is off, and the
    /// extension declared under `capabilities.extensions`.
    ///
    /// The source is read now, into memory, and checked; a skill that breaks a rule (a missing
    /// or malformed front matter, a name that differs from its directory, a limit exceeded, a
    /// symbolic link out of the folder) makes [`build`](ServerBuilder::build) fail with an
    /// error naming it.
    pub fn skills(mut self, source: SkillsSource) -> Self {
        match Catalog::load(&source) {
            Ok(catalog) => install(self, Arc::new(catalog)),
            Err(e) => {
                self.fail(e);
                self
            }
        }
    }
}

fn install(mut builder: ServerBuilder, catalog: Arc<Catalog>) -> ServerBuilder {
    for (uri, file) in &catalog.files {
        let catalog = Arc::clone(&catalog);
        let uri = uri.clone();
        builder = builder.resource(
            file.resource.clone(),
            move |_: Ctx, request: ResourceRequest| {
                let contents = contents(&catalog, &uri, &request.uri);
                async move { contents }
            },
        );
    }
    let list = Arc::clone(&catalog);
    builder = builder.request(SKILLS_LIST, move |ctx: Ctx, params: Value| {
        let answer = list_skills(&list, &ctx, params);
        async move { answer }
    });
    let get = Arc::clone(&catalog);
    builder = builder.request(SKILLS_GET, move |ctx: Ctx, params: Value| {
        let answer = get_skill(&get, &ctx, params);
        async move { answer }
    });
    let mut settings = JsonObject::new();
    if catalog.config.directory_read {
        let directories = Arc::clone(&catalog);
        builder = builder.request(RESOURCES_DIRECTORY_READ, move |ctx: Ctx, params: Value| {
            let answer = read_directory(&directories, &ctx, params);
            async move { answer }
        });
        settings.insert(DIRECTORY_READ_SETTING.into(), Value::Bool(true));
    }
    builder.extension(SKILLS_EXTENSION, settings)
}

/// The contents of the file at `uri`: text when its bytes are UTF-8, else a base64 blob.
fn contents(catalog: &Catalog, uri: &str, asked: &str) -> crate::Result<Vec<ResourceContents>> {
    let Some(file) = catalog.files.get(uri) else {
        return Err(ErrorObject::invalid_params(format!("resource not found: {asked}")).into());
    };
    let mime = file.resource.mime_type.clone().unwrap_or_default();
    let contents = match std::str::from_utf8(&file.bytes) {
        Ok(text) if file.text => ResourceContents::text(uri, text),
        _ => ResourceContents::blob(
            uri,
            base64::engine::general_purpose::STANDARD.encode(&file.bytes),
        ),
    };
    Ok(vec![contents.with_mime_type(mime)])
}

fn decode<T: DeserializeOwned>(params: Value) -> Result<T, ErrorObject> {
    serde_json::from_value(params)
        .map_err(|e| ErrorObject::invalid_params(format!("invalid params: {e}")))
}

fn encode<T: Serialize + Shape>(mut result: T, ctx: &Ctx) -> Result<Value, ErrorObject> {
    result.shape(ctx.protocol_version());
    serde_json::to_value(result).map_err(|e| ErrorObject::internal(format!("internal error: {e}")))
}

fn page_size(catalog: &Catalog) -> usize {
    catalog.config.page_size
}

/// `skills/list`: one page of entries, in URI order; a forged or stale cursor is -32602.
fn list_skills(catalog: &Catalog, ctx: &Ctx, params: Value) -> Result<Value, ErrorObject> {
    let params: ListSkillsParams = decode(params)?;
    let (skills, next_cursor) = paginate(
        &catalog.entries,
        params.cursor.as_deref(),
        page_size(catalog),
        catalog.fingerprint,
    )
    .map_err(|e| ErrorObject::invalid_params(format!("invalid cursor: {e}")))?;
    let config = ctx.server().config();
    let result = ListSkillsResult {
        skills,
        next_cursor,
        ttl_ms: Some(config.cache_ttl_ms),
        cache_scope: Some(config.cache_scope),
        meta: None,
    };
    encode(result, ctx)
}

/// `skills/get`: the entry of the skill whose `SKILL.md` is at `uri`; any other URI is -32602.
fn get_skill(catalog: &Catalog, ctx: &Ctx, params: Value) -> Result<Value, ErrorObject> {
    let params: GetSkillParams = decode(params)?;
    let Some(entry) = catalog
        .by_uri
        .get(&params.uri)
        .and_then(|&i| catalog.entries.get(i))
    else {
        return Err(
            ErrorObject::invalid_params(format!("no skill at {}", params.uri))
                .with_data(json!({ "uri": params.uri })),
        );
    };
    let config = ctx.server().config();
    let result = GetSkillResult {
        skill: entry.clone(),
        ttl_ms: Some(config.cache_ttl_ms),
        cache_scope: Some(config.cache_scope),
        meta: None,
    };
    encode(result, ctx)
}

/// `resources/directory/read`: the direct children of a directory at or under a skill's root;
/// anything else (a file, an unknown URI) is -32602.
fn read_directory(catalog: &Catalog, ctx: &Ctx, params: Value) -> Result<Value, ErrorObject> {
    let params: ReadDirectoryParams = decode(params)?;
    let Some(children) = catalog.directories.get(&params.uri) else {
        let what = if catalog.files.contains_key(&params.uri) {
            "not a directory"
        } else {
            "no such directory"
        };
        return Err(
            ErrorObject::invalid_params(format!("{what}: {}", params.uri))
                .with_data(json!({ "uri": params.uri })),
        );
    };
    let (resources, next_cursor) = paginate(
        children,
        params.cursor.as_deref(),
        page_size(catalog),
        catalog.fingerprint,
    )
    .map_err(|e| ErrorObject::invalid_params(format!("invalid cursor: {e}")))?;
    encode(
        ReadDirectoryResult {
            resources,
            next_cursor,
            meta: None,
        },
        ctx,
    )
}
