//! Method names and the typed method markers.
//!
//! [`names`] holds every method string so the runtime can `match` on it. Each MCP method also has
//! an uninhabited marker type implementing [`RequestMethod`] or [`NotificationMethod`], which ties
//! the method name to its params and result types (in the manner of lsp-types).
//!
//! The `Result` of a request is its ordinary, complete result. In 2026-07-28 `tools/call`,
//! `prompts/get` and `resources/read` may instead answer with an
//! [`InputRequiredResult`](crate::mrtr::InputRequiredResult); check
//! [`ResultType::of`](crate::mrtr::ResultType::of) on the raw result before decoding it.

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::completion::{CompleteParams, CompleteResult};
use crate::elicitation::{ElicitRequestParams, ElicitResult, ElicitationCompleteParams};
use crate::lifecycle::{
    DiscoverResult, EmptyResult, InitializeParams, InitializeResult, NotificationParams,
    PaginatedParams, RequestParams,
};
use crate::listen::{
    SubscriptionsAcknowledgedParams, SubscriptionsListenParams, SubscriptionsListenResult,
};
use crate::logging::{LoggingMessageParams, SetLevelParams};
use crate::progress::{CancelledParams, ProgressParams};
use crate::prompts::{GetPromptParams, GetPromptResult, ListPromptsResult};
use crate::resources::{
    ListResourceTemplatesResult, ListResourcesResult, ReadResourceParams, ReadResourceResult,
    ResourceUpdatedParams, SubscribeParams, UnsubscribeParams,
};
use crate::roots::ListRootsResult;
use crate::sampling::{CreateMessageParams, CreateMessageResult};
use crate::tasks::{
    CancelTaskParams, CancelTaskResult, GetTaskParams, GetTaskPayloadParams, GetTaskPayloadResult,
    GetTaskResult, ListTasksResult, TaskStatusNotificationParams,
};
use crate::tools::{CallToolParams, CallToolResult, ListToolsResult};

/// A request method: its name, params and result.
pub trait RequestMethod {
    /// The method name.
    const METHOD: &'static str;
    /// The params.
    type Params: Serialize + DeserializeOwned;
    /// The (complete) result.
    type Result: Serialize + DeserializeOwned;
}

/// A notification method: its name and params.
pub trait NotificationMethod {
    /// The method name.
    const METHOD: &'static str;
    /// The params.
    type Params: Serialize + DeserializeOwned;
}

/// Every MCP method name.
pub mod names {
    /// `initialize` (sessionful revisions).
    pub const INITIALIZE: &str = "initialize";
    /// `ping` (sessionful revisions).
    pub const PING: &str = "ping";
    /// `server/discover` (2026-07-28).
    pub const SERVER_DISCOVER: &str = "server/discover";
    /// `tools/list`.
    pub const TOOLS_LIST: &str = "tools/list";
    /// `tools/call`.
    pub const TOOLS_CALL: &str = "tools/call";
    /// `resources/list`.
    pub const RESOURCES_LIST: &str = "resources/list";
    /// `resources/templates/list`.
    pub const RESOURCES_TEMPLATES_LIST: &str = "resources/templates/list";
    /// `resources/read`.
    pub const RESOURCES_READ: &str = "resources/read";
    /// `resources/subscribe` (sessionful revisions).
    pub const RESOURCES_SUBSCRIBE: &str = "resources/subscribe";
    /// `resources/unsubscribe` (sessionful revisions).
    pub const RESOURCES_UNSUBSCRIBE: &str = "resources/unsubscribe";
    /// `prompts/list`.
    pub const PROMPTS_LIST: &str = "prompts/list";
    /// `prompts/get`.
    pub const PROMPTS_GET: &str = "prompts/get";
    /// `completion/complete`.
    pub const COMPLETION_COMPLETE: &str = "completion/complete";
    /// `logging/setLevel` (sessionful revisions).
    pub const LOGGING_SET_LEVEL: &str = "logging/setLevel";
    /// `sampling/createMessage`.
    pub const SAMPLING_CREATE_MESSAGE: &str = "sampling/createMessage";
    /// `elicitation/create`.
    pub const ELICITATION_CREATE: &str = "elicitation/create";
    /// `roots/list`.
    pub const ROOTS_LIST: &str = "roots/list";
    /// `subscriptions/listen` (2026-07-28).
    pub const SUBSCRIPTIONS_LISTEN: &str = "subscriptions/listen";
    /// `tasks/get` (2025-11-25).
    pub const TASKS_GET: &str = "tasks/get";
    /// `tasks/result` (2025-11-25).
    pub const TASKS_RESULT: &str = "tasks/result";
    /// `tasks/list` (2025-11-25).
    pub const TASKS_LIST: &str = "tasks/list";
    /// `tasks/cancel` (2025-11-25).
    pub const TASKS_CANCEL: &str = "tasks/cancel";

    /// `notifications/initialized` (sessionful revisions).
    pub const NOTIFICATIONS_INITIALIZED: &str = "notifications/initialized";
    /// `notifications/cancelled`.
    pub const NOTIFICATIONS_CANCELLED: &str = "notifications/cancelled";
    /// `notifications/progress`.
    pub const NOTIFICATIONS_PROGRESS: &str = "notifications/progress";
    /// `notifications/message`.
    pub const NOTIFICATIONS_MESSAGE: &str = "notifications/message";
    /// `notifications/resources/updated`.
    pub const NOTIFICATIONS_RESOURCES_UPDATED: &str = "notifications/resources/updated";
    /// `notifications/resources/list_changed`.
    pub const NOTIFICATIONS_RESOURCES_LIST_CHANGED: &str = "notifications/resources/list_changed";
    /// `notifications/tools/list_changed`.
    pub const NOTIFICATIONS_TOOLS_LIST_CHANGED: &str = "notifications/tools/list_changed";
    /// `notifications/prompts/list_changed`.
    pub const NOTIFICATIONS_PROMPTS_LIST_CHANGED: &str = "notifications/prompts/list_changed";
    /// `notifications/roots/list_changed` (sessionful revisions).
    pub const NOTIFICATIONS_ROOTS_LIST_CHANGED: &str = "notifications/roots/list_changed";
    /// `notifications/elicitation/complete` (2025-11-25).
    pub const NOTIFICATIONS_ELICITATION_COMPLETE: &str = "notifications/elicitation/complete";
    /// `notifications/subscriptions/acknowledged` (2026-07-28).
    pub const NOTIFICATIONS_SUBSCRIPTIONS_ACKNOWLEDGED: &str =
        "notifications/subscriptions/acknowledged";
    /// `notifications/tasks/status` (2025-11-25).
    pub const NOTIFICATIONS_TASKS_STATUS: &str = "notifications/tasks/status";
    /// `notifications/replay_truncated`: barrel-mcp's notice that a resumed stream lost events
    /// (not a spec method).
    pub const NOTIFICATIONS_REPLAY_TRUNCATED: &str = "notifications/replay_truncated";
}

/// True when `method` is a request or notification of the spec (any revision), as opposed to
/// an extension's or an application's own method.
pub fn is_spec_method(method: &str) -> bool {
    use names::*;
    [
        INITIALIZE,
        PING,
        SERVER_DISCOVER,
        TOOLS_LIST,
        TOOLS_CALL,
        RESOURCES_LIST,
        RESOURCES_TEMPLATES_LIST,
        RESOURCES_READ,
        RESOURCES_SUBSCRIBE,
        RESOURCES_UNSUBSCRIBE,
        PROMPTS_LIST,
        PROMPTS_GET,
        COMPLETION_COMPLETE,
        LOGGING_SET_LEVEL,
        SAMPLING_CREATE_MESSAGE,
        ELICITATION_CREATE,
        ROOTS_LIST,
        SUBSCRIPTIONS_LISTEN,
        TASKS_GET,
        TASKS_RESULT,
        TASKS_LIST,
        TASKS_CANCEL,
        NOTIFICATIONS_INITIALIZED,
        NOTIFICATIONS_CANCELLED,
        NOTIFICATIONS_PROGRESS,
        NOTIFICATIONS_MESSAGE,
        NOTIFICATIONS_RESOURCES_UPDATED,
        NOTIFICATIONS_RESOURCES_LIST_CHANGED,
        NOTIFICATIONS_TOOLS_LIST_CHANGED,
        NOTIFICATIONS_PROMPTS_LIST_CHANGED,
        NOTIFICATIONS_ROOTS_LIST_CHANGED,
        NOTIFICATIONS_ELICITATION_COMPLETE,
        NOTIFICATIONS_SUBSCRIPTIONS_ACKNOWLEDGED,
        NOTIFICATIONS_TASKS_STATUS,
    ]
    .contains(&method)
}

macro_rules! request_methods {
    ($($(#[$doc:meta])* $marker:ident = $name:ident, $params:ty => $result:ty;)*) => {$(
        $(#[$doc])*
        #[derive(Debug)]
        pub enum $marker {}

        impl RequestMethod for $marker {
            const METHOD: &'static str = names::$name;
            type Params = $params;
            type Result = $result;
        }
    )*};
}

macro_rules! notification_methods {
    ($($(#[$doc:meta])* $marker:ident = $name:ident, $params:ty;)*) => {$(
        $(#[$doc])*
        #[derive(Debug)]
        pub enum $marker {}

        impl NotificationMethod for $marker {
            const METHOD: &'static str = names::$name;
            type Params = $params;
        }
    )*};
}

request_methods! {
    /// `initialize`.
    Initialize = INITIALIZE, InitializeParams => InitializeResult;
    /// `ping`.
    Ping = PING, RequestParams => EmptyResult;
    /// `server/discover`.
    Discover = SERVER_DISCOVER, RequestParams => DiscoverResult;
    /// `tools/list`.
    ListTools = TOOLS_LIST, PaginatedParams => ListToolsResult;
    /// `tools/call`.
    CallTool = TOOLS_CALL, CallToolParams => CallToolResult;
    /// `resources/list`.
    ListResources = RESOURCES_LIST, PaginatedParams => ListResourcesResult;
    /// `resources/templates/list`.
    ListResourceTemplates = RESOURCES_TEMPLATES_LIST, PaginatedParams => ListResourceTemplatesResult;
    /// `resources/read`.
    ReadResource = RESOURCES_READ, ReadResourceParams => ReadResourceResult;
    /// `resources/subscribe`.
    Subscribe = RESOURCES_SUBSCRIBE, SubscribeParams => EmptyResult;
    /// `resources/unsubscribe`.
    Unsubscribe = RESOURCES_UNSUBSCRIBE, UnsubscribeParams => EmptyResult;
    /// `prompts/list`.
    ListPrompts = PROMPTS_LIST, PaginatedParams => ListPromptsResult;
    /// `prompts/get`.
    GetPrompt = PROMPTS_GET, GetPromptParams => GetPromptResult;
    /// `completion/complete`.
    Complete = COMPLETION_COMPLETE, CompleteParams => CompleteResult;
    /// `logging/setLevel`.
    SetLevel = LOGGING_SET_LEVEL, SetLevelParams => EmptyResult;
    /// `sampling/createMessage`.
    CreateMessage = SAMPLING_CREATE_MESSAGE, CreateMessageParams => CreateMessageResult;
    /// `elicitation/create`.
    Elicit = ELICITATION_CREATE, ElicitRequestParams => ElicitResult;
    /// `roots/list`.
    ListRoots = ROOTS_LIST, RequestParams => ListRootsResult;
    /// `subscriptions/listen`.
    SubscriptionsListen = SUBSCRIPTIONS_LISTEN, SubscriptionsListenParams => SubscriptionsListenResult;
    /// `tasks/get`.
    GetTask = TASKS_GET, GetTaskParams => GetTaskResult;
    /// `tasks/result`.
    GetTaskPayload = TASKS_RESULT, GetTaskPayloadParams => GetTaskPayloadResult;
    /// `tasks/list`.
    ListTasks = TASKS_LIST, PaginatedParams => ListTasksResult;
    /// `tasks/cancel`.
    CancelTask = TASKS_CANCEL, CancelTaskParams => CancelTaskResult;
}

notification_methods! {
    /// `notifications/initialized`.
    Initialized = NOTIFICATIONS_INITIALIZED, NotificationParams;
    /// `notifications/cancelled`.
    Cancelled = NOTIFICATIONS_CANCELLED, CancelledParams;
    /// `notifications/progress`.
    Progress = NOTIFICATIONS_PROGRESS, ProgressParams;
    /// `notifications/message`.
    LoggingMessage = NOTIFICATIONS_MESSAGE, LoggingMessageParams;
    /// `notifications/resources/updated`.
    ResourceUpdated = NOTIFICATIONS_RESOURCES_UPDATED, ResourceUpdatedParams;
    /// `notifications/resources/list_changed`.
    ResourceListChanged = NOTIFICATIONS_RESOURCES_LIST_CHANGED, NotificationParams;
    /// `notifications/tools/list_changed`.
    ToolListChanged = NOTIFICATIONS_TOOLS_LIST_CHANGED, NotificationParams;
    /// `notifications/prompts/list_changed`.
    PromptListChanged = NOTIFICATIONS_PROMPTS_LIST_CHANGED, NotificationParams;
    /// `notifications/roots/list_changed`.
    RootsListChanged = NOTIFICATIONS_ROOTS_LIST_CHANGED, NotificationParams;
    /// `notifications/elicitation/complete`.
    ElicitationComplete = NOTIFICATIONS_ELICITATION_COMPLETE, ElicitationCompleteParams;
    /// `notifications/subscriptions/acknowledged`.
    SubscriptionsAcknowledged = NOTIFICATIONS_SUBSCRIPTIONS_ACKNOWLEDGED, SubscriptionsAcknowledgedParams;
    /// `notifications/tasks/status`.
    TaskStatusNotification = NOTIFICATIONS_TASKS_STATUS, TaskStatusNotificationParams;
}

/// The method markers again, for callers that prefer `method::methods::CallTool`.
pub mod methods {
    pub use super::{
        CallTool, CancelTask, Cancelled, Complete, CreateMessage, Discover, Elicit,
        ElicitationComplete, GetPrompt, GetTask, GetTaskPayload, Initialize, Initialized,
        ListPrompts, ListResourceTemplates, ListResources, ListRoots, ListTasks, ListTools,
        LoggingMessage, Ping, Progress, PromptListChanged, ReadResource, ResourceListChanged,
        ResourceUpdated, RootsListChanged, SetLevel, Subscribe, SubscriptionsAcknowledged,
        SubscriptionsListen, TaskStatusNotification, ToolListChanged, Unsubscribe,
    };
}
