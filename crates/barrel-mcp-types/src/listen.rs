//! `subscriptions/listen` (2026-07-28): one long-lived request on which the server delivers the
//! change notifications the client opted in to, each tagged with the listen request's id in
//! `_meta["io.modelcontextprotocol/subscriptionId"]`. It replaces `resources/subscribe` and the
//! unsolicited `list_changed` notifications of the sessionful revisions.

use serde::{Deserialize, Serialize};

use crate::meta::Meta;

/// The notification kinds a listen request opts in to. Absent means not subscribed.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionFilter {
    /// `notifications/tools/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools_list_changed: Option<bool>,
    /// `notifications/prompts/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts_list_changed: Option<bool>,
    /// `notifications/resources/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources_list_changed: Option<bool>,
    /// `notifications/resources/updated` for these URIs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_subscriptions: Option<Vec<String>>,
    /// `notifications/tasks` for these task ids (the `io.modelcontextprotocol/tasks` extension).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_ids: Option<Vec<String>>,
}

impl SubscriptionFilter {
    /// True when the filter subscribes to nothing.
    pub fn is_empty(&self) -> bool {
        self.tools_list_changed != Some(true)
            && self.prompts_list_changed != Some(true)
            && self.resources_list_changed != Some(true)
            && self
                .resource_subscriptions
                .as_ref()
                .is_none_or(Vec::is_empty)
            && self.task_ids.as_ref().is_none_or(Vec::is_empty)
    }

    /// The part of this filter that `supported` also allows: what a server acknowledges.
    /// Flags survive when true in both; lists keep only the entries `supported` lists.
    pub fn intersect(&self, supported: &Self) -> Self {
        let flag =
            |a: Option<bool>, b: Option<bool>| (a == Some(true) && b == Some(true)).then_some(true);
        let list = |a: &Option<Vec<String>>, b: &Option<Vec<String>>| match (a, b) {
            (Some(a), Some(b)) => {
                let kept: Vec<String> = a.iter().filter(|x| b.contains(x)).cloned().collect();
                (!kept.is_empty()).then_some(kept)
            }
            _ => None,
        };
        Self {
            tools_list_changed: flag(self.tools_list_changed, supported.tools_list_changed),
            prompts_list_changed: flag(self.prompts_list_changed, supported.prompts_list_changed),
            resources_list_changed: flag(
                self.resources_list_changed,
                supported.resources_list_changed,
            ),
            resource_subscriptions: list(
                &self.resource_subscriptions,
                &supported.resource_subscriptions,
            ),
            task_ids: list(&self.task_ids, &supported.task_ids),
        }
    }
}

/// Params of `subscriptions/listen`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SubscriptionsListenParams {
    /// What to receive.
    pub notifications: SubscriptionFilter,
    /// Metadata (the per-request envelope).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// Params of `notifications/subscriptions/acknowledged`: the subset the server will honour.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SubscriptionsAcknowledgedParams {
    /// What the server will send.
    pub notifications: SubscriptionFilter,
    /// Metadata (carries the `subscriptionId`).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// Result of `subscriptions/listen`, sent when the server ends the subscription gracefully. Its
/// `_meta` carries the `subscriptionId`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SubscriptionsListenResult {
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intersect_keeps_the_common_part() {
        let asked = SubscriptionFilter {
            tools_list_changed: Some(true),
            prompts_list_changed: Some(true),
            resource_subscriptions: Some(vec!["a".into(), "b".into()]),
            ..SubscriptionFilter::default()
        };
        let supported = SubscriptionFilter {
            tools_list_changed: Some(true),
            resource_subscriptions: Some(vec!["b".into()]),
            ..SubscriptionFilter::default()
        };
        let ack = asked.intersect(&supported);
        assert_eq!(ack.tools_list_changed, Some(true));
        assert_eq!(ack.prompts_list_changed, None);
        assert_eq!(ack.resource_subscriptions, Some(vec!["b".into()]));
        assert!(!ack.is_empty());
        assert!(SubscriptionFilter::default().is_empty());
    }
}
