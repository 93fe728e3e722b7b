//! Tests of what a session's announcer keeps: nothing before the client initialized, each
//! change once and in order, updates of subscribed resources only, and a sending task started
//! only when none runs.

use barrel_mcp_types::{InitializeParams, ProtocolVersion};

use super::*;

fn session() -> Session {
    Session::new(
        None,
        ProtocolVersion::V2025_11_25,
        InitializeParams::default(),
        None,
    )
}

#[tokio::test]
async fn changes_are_kept_once_each_in_order_until_taken() {
    let session = session();
    let announcer = &session.announcer;
    // Before `initialized`: nothing is kept, no task is started.
    assert!(
        announcer
            .noted(&ServerEvent::ToolsChanged, &session)
            .is_none()
    );
    assert!(announcer.take().is_empty());

    assert!(announcer.open());
    assert!(!announcer.open(), "opened once");
    // The first change starts a task; the ones noted while it runs do not.
    assert!(
        announcer
            .noted(&ServerEvent::PromptsChanged, &session)
            .is_some()
    );
    assert!(
        announcer
            .noted(&ServerEvent::ToolsChanged, &session)
            .is_none()
    );
    assert!(
        announcer
            .noted(&ServerEvent::PromptsChanged, &session)
            .is_none()
    );
    // An update of a resource the session does not subscribe to is not kept.
    let updated = |uri: &str| ServerEvent::ResourceUpdated(uri.to_owned());
    assert!(announcer.noted(&updated("test://a"), &session).is_none());
    session.subscribe("test://a".to_owned(), 10).expect("room");
    assert!(announcer.noted(&updated("test://a"), &session).is_none());
    assert!(announcer.noted(&updated("test://a"), &session).is_none());
    assert_eq!(
        announcer.take(),
        [
            ServerEvent::PromptsChanged,
            ServerEvent::ToolsChanged,
            updated("test://a")
        ]
    );
    // Nothing left: the task ends, and the next change starts another.
    assert!(announcer.take().is_empty());
    assert!(
        announcer
            .noted(&ServerEvent::ToolsChanged, &session)
            .is_some()
    );
    assert_eq!(announcer.take(), [ServerEvent::ToolsChanged]);
}

#[test]
fn outside_a_runtime_nothing_is_opened() {
    let session = session();
    assert!(!session.announcer.open());
    assert!(
        session
            .announcer
            .noted(&ServerEvent::ToolsChanged, &session)
            .is_none()
    );
}
