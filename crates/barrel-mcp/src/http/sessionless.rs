//! POST for a sessionless server ([`HttpConfig::sessionless`](super::HttpConfig::sessionless))
//! in the sessionful revisions: no session is opened or looked up; every request is served on
//! its own, as a 2026-07-28 request is, in the revision it names.

use std::sync::Arc;

use axum::response::Response;
use barrel_mcp_types::jsonrpc::Members;
use barrel_mcp_types::{Message, ProtocolVersion};
use http::StatusCode;

use super::State;
use super::reply::{self, Accepts};
use super::stateless::{self, Era};
use super::version_header::VersionHeader;
use crate::server;
use crate::transport::Caller;

/// The revision of a request that names none (what the spec tells a server to assume).
const WITHOUT_HEADER: ProtocolVersion = ProtocolVersion::V2025_03_26;

/// Serves one POST body: a request is answered on its own; a notification or a response is
/// accepted (202) and dropped, as there is no session for it to reach.
pub(crate) async fn post(
    state: &Arc<State>,
    version: &VersionHeader,
    caller: Option<Arc<Caller>>,
    accepts: Accepts,
    body: Members,
) -> Response {
    let header = match version.sessionful() {
        Ok(header) => header,
        Err(response) => return response,
    };
    let request = match body.decode() {
        Ok(Message::Request(request)) => request,
        Ok(_) => return reply::empty(StatusCode::ACCEPTED),
        Err(e) => return reply::error(StatusCode::BAD_REQUEST, e.id, e.error),
    };
    if request.method == "initialize"
        && let Err(error) = server::read_initialize(request.params.as_ref())
    {
        return reply::error(StatusCode::BAD_REQUEST, Some(request.id), error);
    }
    // `initialize` negotiates from its params; every other request is in the revision it names.
    let version = header.unwrap_or(WITHOUT_HEADER);
    stateless::serve(state, accepts, request, caller, Era::Sessionless(version)).await
}
