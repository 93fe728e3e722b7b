//! The fixture builds, and offers what the conformance suite looks for.

#[test]
fn the_fixture_builds_and_advertises_every_capability() {
    let server = barrel_mcp_conformance::fixture::server().expect("the fixture is valid");
    let caps = serde_json::to_value(server.capabilities()).expect("capabilities serialize");
    assert_eq!(caps["tools"]["listChanged"], true);
    assert_eq!(caps["resources"]["subscribe"], true);
    assert_eq!(caps["resources"]["listChanged"], true);
    assert_eq!(caps["prompts"]["listChanged"], true);
    assert!(caps["logging"].is_object());
    assert!(caps["completions"].is_object());
    // The skills folder is read and checked when the fixture is built.
    assert_eq!(
        caps["extensions"]["io.modelcontextprotocol/skills"],
        serde_json::json!({ "directoryRead": true })
    );
}

#[tokio::test]
async fn dynamic_items_can_be_added_twice() {
    let server = barrel_mcp_conformance::fixture::server().expect("the fixture is valid");
    barrel_mcp_conformance::fixture::add_dynamic_items(&server);
    barrel_mcp_conformance::fixture::add_dynamic_items(&server);
}
