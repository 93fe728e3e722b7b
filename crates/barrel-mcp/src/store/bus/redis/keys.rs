//! The keys and channels of the Redis bus, under a prefix `P` (default `mcp`):
//!
//! | key or channel | type | holds | expires |
//! |---|---|---|---|
//! | `P:nodes:next` | string | the last node tag issued (`INCR`) | `tag_counter_ttl` (7 days) after the last heartbeat of any node |
//! | `P:node:{tag}` | string | the membership of the node holding `tag`: `{"i": instance id, "n": name, "t": start ms}` | `heartbeat_expiry` (3 s), renewed every `heartbeat_interval` (1 s); deleted when the node stops |
//! | `P:n:{tag}:<instance>` | stream | the inbox of the instance holding `tag` (its id in hex, as in its membership record): entries `i` (message id), `f` (sender tag), `b` (body); read entries are trimmed | `inbox_ttl` (60 s) after the last send or heartbeat; deleted when the node stops |
//! | `P:b` | channel | registry broadcasts | — |
//! | `P:bs:{sid}` | channel | broadcasts about session `sid` | — |
//! | `P:bt:{tid}` | channel | broadcasts about task `tid` | — |
//!
//! Standalone Redis or Sentinel, not Cluster: the heartbeat touches the counter and a node's
//! keys in one script, and the claim and send scripts build key names (the `{…}` in the names
//! groups a node's keys, but the bus does not declare every key a script touches).

use crate::store::NodeTag;
use crate::store::bus::Topic;

/// The key and channel names of one bus.
#[derive(Debug, Clone)]
pub(super) struct Keys {
    prefix: String,
}

impl Keys {
    pub(super) fn new(prefix: &str) -> Self {
        Self {
            prefix: prefix.to_owned(),
        }
    }

    pub(super) fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The counter node tags are issued from.
    pub(super) fn counter(&self) -> String {
        format!("{}:nodes:next", self.prefix)
    }

    /// The membership of the node with `tag`.
    pub(super) fn node(&self, tag: NodeTag) -> String {
        format!("{}{{{tag}}}", self.node_stem())
    }

    /// What [`node`](Self::node) puts before `{tag}` (scripts that pick tags build keys).
    pub(super) fn node_stem(&self) -> String {
        format!("{}:node:", self.prefix)
    }

    /// The inbox of instance `instance` (its id in hex) while it holds `tag`. Named by
    /// instance, not only by tag: an instance that still believes it holds a tag another one
    /// took never reads (nor trims) the messages sent to the new holder.
    pub(super) fn inbox(&self, tag: NodeTag, instance: &str) -> String {
        format!("{}{{{tag}}}:{instance}", self.inbox_stem())
    }

    /// What [`inbox`](Self::inbox) puts before `{tag}` (the send script builds the name from
    /// the membership record).
    pub(super) fn inbox_stem(&self) -> String {
        format!("{}:n:", self.prefix)
    }

    /// The channel of `topic`.
    pub(super) fn channel(&self, topic: &Topic) -> String {
        match topic {
            Topic::Registry => format!("{}:b", self.prefix),
            Topic::Session(sid) => format!("{}:bs:{{{sid}}}", self.prefix),
            Topic::Task(tid) => format!("{}:bt:{{{tid}}}", self.prefix),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        let keys = Keys::new("mcp");
        let tag = NodeTag::new(7).unwrap();
        assert_eq!(keys.counter(), "mcp:nodes:next");
        assert_eq!(keys.node(tag), "mcp:node:{7}");
        assert_eq!(keys.inbox(tag, "00ff"), "mcp:n:{7}:00ff");
        assert!(keys.node(tag).starts_with(&keys.node_stem()));
        assert!(keys.inbox(tag, "00ff").starts_with(&keys.inbox_stem()));
        assert_eq!(keys.channel(&Topic::Registry), "mcp:b");
        assert_eq!(keys.channel(&Topic::Session("s1".into())), "mcp:bs:{s1}");
        assert_eq!(keys.channel(&Topic::Task("t1".into())), "mcp:bt:{t1}");
    }
}
