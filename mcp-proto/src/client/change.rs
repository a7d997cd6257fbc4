//! Typed views of the server's change notifications: the `list_changed` family and
//! `notifications/resources/updated` (2025-06-18 and 2025-11-25 unsolicited; in
//! 2026-07-28 on a `subscriptions/listen` stream).

use serde::Deserialize;
use serde_json::{Map, Value};
use std::collections::BTreeSet;

use crate::jsonrpc::{Notification, RequestId};

/// The `_meta` key naming the subscription a 2026-07-28 notification belongs to.
pub const SUBSCRIPTION_ID_KEY: &str = "io.modelcontextprotocol/subscriptionId";

/// A change the server announced.
///
/// ```
/// use mcp_proto::client::Change;
/// use mcp_proto::jsonrpc::Notification;
/// use serde_json::value::RawValue;
///
/// let n = Notification {
///     method: "notifications/resources/updated".into(),
///     params: Some(RawValue::from_string(r#"{"uri":"file:///a"}"#.into()).unwrap()),
/// };
/// assert_eq!(Change::from_notification(&n), Some(Change::ResourceUpdated { uri: "file:///a".into() }));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Change {
    /// `notifications/tools/list_changed`.
    ToolsListChanged,
    /// `notifications/prompts/list_changed`.
    PromptsListChanged,
    /// `notifications/resources/list_changed`.
    ResourcesListChanged,
    /// `notifications/resources/updated`: the resource at `uri` (or, in 2026-07-28, a
    /// sub-resource of a subscribed URI) changed.
    ResourceUpdated {
        /// The resource that changed.
        uri: String,
    },
}

impl Change {
    /// The change `n` announces; `None` for any other method, or for an `updated`
    /// notification without a string `uri`.
    #[must_use]
    pub fn from_notification(n: &Notification) -> Option<Change> {
        match n.method.as_str() {
            "notifications/tools/list_changed" => Some(Change::ToolsListChanged),
            "notifications/prompts/list_changed" => Some(Change::PromptsListChanged),
            "notifications/resources/list_changed" => Some(Change::ResourcesListChanged),
            "notifications/resources/updated" => {
                #[derive(Deserialize)]
                struct Updated {
                    uri: String,
                }
                let p = n.params.as_deref()?;
                let u = serde_json::from_str::<Updated>(p.get()).ok()?;
                Some(Change::ResourceUpdated { uri: u.uri })
            }
            _ => None,
        }
    }

    /// The notification's method.
    #[must_use]
    pub fn method(&self) -> &'static str {
        match self {
            Change::ToolsListChanged => "notifications/tools/list_changed",
            Change::PromptsListChanged => "notifications/prompts/list_changed",
            Change::ResourcesListChanged => "notifications/resources/list_changed",
            Change::ResourceUpdated { .. } => "notifications/resources/updated",
        }
    }
}

/// The subscription `n` belongs to: its `_meta["io.modelcontextprotocol/subscriptionId"]`
/// (a string or a number), if it has one.
#[must_use]
pub fn subscription_id(n: &Notification) -> Option<RequestId> {
    #[derive(Deserialize)]
    struct Params {
        #[serde(rename = "_meta")]
        meta: Option<Meta>,
    }
    #[derive(Deserialize)]
    struct Meta {
        #[serde(rename = "io.modelcontextprotocol/subscriptionId")]
        id: Option<RequestId>,
    }
    let p = n.params.as_deref()?;
    serde_json::from_str::<Params>(p.get()).ok()?.meta?.id
}

/// The most resource URIs (and, apart, the most task ids) one [`ListenFilter`] read from
/// the server keeps; the rest of a longer acknowledgement is ignored.
pub const MAX_FILTER_URIS: usize = 1024;

/// 2026-07-28: what a `subscriptions/listen` asks for (its `notifications` member), or
/// what the server acknowledged. Built with [`ListenFilter::new`] and the methods after.
///
/// ```
/// use mcp_proto::client::ListenFilter;
///
/// let asked = ListenFilter::new().tools().prompts().resource("file:///a").resource("file:///b");
/// let granted = ListenFilter::new().tools().resource("file:///a");
/// assert_eq!(asked.missing_from(&granted), ListenFilter::new().prompts().resource("file:///b"));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ListenFilter {
    /// `toolsListChanged`.
    pub tools_list_changed: bool,
    /// `promptsListChanged`.
    pub prompts_list_changed: bool,
    /// `resourcesListChanged`.
    pub resources_list_changed: bool,
    /// `resourceSubscriptions`: the URIs whose `notifications/resources/updated` are wanted.
    pub resource_subscriptions: Vec<String>,
    /// `taskIds` (the tasks extension): the tasks whose `notifications/tasks` are
    /// wanted. A listen asking for any declares the extension.
    pub task_ids: Vec<String>,
}

impl ListenFilter {
    /// Asks for nothing.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Also `notifications/tools/list_changed`.
    #[must_use]
    pub fn tools(mut self) -> Self {
        self.tools_list_changed = true;
        self
    }

    /// Also `notifications/prompts/list_changed`.
    #[must_use]
    pub fn prompts(mut self) -> Self {
        self.prompts_list_changed = true;
        self
    }

    /// Also `notifications/resources/list_changed`.
    #[must_use]
    pub fn resources(mut self) -> Self {
        self.resources_list_changed = true;
        self
    }

    /// Also `notifications/resources/updated` for `uri`.
    #[must_use]
    pub fn resource(mut self, uri: impl Into<String>) -> Self {
        self.resource_subscriptions.push(uri.into());
        self
    }

    /// Also `notifications/tasks` for the task `task_id` (the tasks extension).
    #[must_use]
    pub fn task(mut self, task_id: impl Into<String>) -> Self {
        self.task_ids.push(task_id.into());
        self
    }

    /// Whether it asks for nothing.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// The `notifications` member, as sent.
    #[must_use]
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        for (key, on) in [
            ("toolsListChanged", self.tools_list_changed),
            ("promptsListChanged", self.prompts_list_changed),
            ("resourcesListChanged", self.resources_list_changed),
        ] {
            if on {
                m.insert(key.into(), Value::Bool(true));
            }
        }
        if !self.resource_subscriptions.is_empty() {
            let uris = self
                .resource_subscriptions
                .iter()
                .cloned()
                .map(Value::String);
            m.insert("resourceSubscriptions".into(), Value::Array(uris.collect()));
        }
        if !self.task_ids.is_empty() {
            let ids = self.task_ids.iter().cloned().map(Value::String);
            m.insert("taskIds".into(), Value::Array(ids.collect()));
        }
        Value::Object(m)
    }

    /// Reads a `notifications` member leniently: members of the wrong type count as
    /// absent, and at most [`MAX_FILTER_URIS`] URIs are kept.
    #[must_use]
    pub fn from_json(value: &Value) -> Self {
        let flag = |key: &str| value.get(key).and_then(Value::as_bool) == Some(true);
        let strings = |key: &str| -> Vec<String> {
            value
                .get(key)
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .take(MAX_FILTER_URIS)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default()
        };
        let resource_subscriptions = strings("resourceSubscriptions");
        let task_ids = strings("taskIds");
        ListenFilter {
            tools_list_changed: flag("toolsListChanged"),
            prompts_list_changed: flag("promptsListChanged"),
            resources_list_changed: flag("resourcesListChanged"),
            resource_subscriptions,
            task_ids,
        }
    }

    /// What `self` asks for that `granted` leaves out (empty when all was granted).
    /// Linear in both (the URIs and ids granted are looked up in a set).
    #[must_use]
    pub fn missing_from(&self, granted: &ListenFilter) -> ListenFilter {
        self.sorted_by(granted, false)
    }

    /// What `self` (a server's grant) holds of what `asked` asks for: a grant of more
    /// than was asked is not kept. Linear in both (the grant is looked up in a set).
    #[must_use]
    pub fn within(&self, asked: &ListenFilter) -> ListenFilter {
        asked.sorted_by(self, true)
    }

    /// What `self` asks for that `granted` grants (`kept`), or leaves out.
    fn sorted_by(&self, granted: &ListenFilter, kept: bool) -> ListenFilter {
        fn set(items: &[String]) -> BTreeSet<&str> {
            items.iter().map(String::as_str).collect()
        }
        let (uris, tasks) = (set(&granted.resource_subscriptions), set(&granted.task_ids));
        let pick = |items: &[String], set: &BTreeSet<&str>| -> Vec<String> {
            (items.iter())
                .filter(|i| set.contains(i.as_str()) == kept)
                .cloned()
                .collect()
        };
        ListenFilter {
            tools_list_changed: self.tools_list_changed && granted.tools_list_changed == kept,
            prompts_list_changed: self.prompts_list_changed && granted.prompts_list_changed == kept,
            resources_list_changed: self.resources_list_changed
                && granted.resources_list_changed == kept,
            resource_subscriptions: pick(&self.resource_subscriptions, &uris),
            task_ids: pick(&self.task_ids, &tasks),
        }
    }

    /// What it holds on the heap, estimated (its strings and their slots).
    #[must_use]
    pub fn retained_bytes(&self) -> usize {
        let strings = self.resource_subscriptions.iter().chain(&self.task_ids);
        strings
            .map(|s| s.len() + std::mem::size_of::<String>())
            .sum()
    }
}

/// How a 2026-07-28 subscription ended (see [`Event::SubscriptionEnded`](super::Event::SubscriptionEnded)).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ListenEnd {
    /// The server ended it gracefully: the listen result `{"resultType":"complete"}`.
    Complete,
    /// The server tore it down with `notifications/cancelled` for the listen id.
    CancelledByServer,
    /// The client ended it ([`Client::cancel`](super::Client::cancel)).
    EndedByClient,
    /// It failed: an error answer, the connection closing, a transport failure.
    Failed(super::CallError),
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::value::RawValue;

    fn note(method: &str, params: &str) -> Notification {
        Notification {
            method: method.into(),
            params: Some(RawValue::from_string(params.into()).unwrap()),
        }
    }

    #[test]
    fn changes_and_subscription_ids_are_read() {
        let n = note(
            "notifications/tools/list_changed",
            r#"{"_meta":{"io.modelcontextprotocol/subscriptionId":"listen-1"}}"#,
        );
        assert_eq!(
            Change::from_notification(&n),
            Some(Change::ToolsListChanged)
        );
        assert_eq!(
            subscription_id(&n),
            Some(RequestId::String("listen-1".into()))
        );
        let n = note(
            "notifications/resources/updated",
            r#"{"_meta":{"io.modelcontextprotocol/subscriptionId":1},"uri":"file:///project/config.json"}"#,
        );
        assert_eq!(subscription_id(&n), Some(RequestId::Number(1)));
        assert_eq!(
            Change::from_notification(&n).map(|c| c.method()),
            Some("notifications/resources/updated")
        );
        assert_eq!(
            Change::from_notification(&note("notifications/resources/updated", "{}")),
            None
        );
        assert_eq!(
            Change::from_notification(&note("notifications/message", "{}")),
            None
        );
        assert_eq!(subscription_id(&note("x", "[1]")), None);
    }
}
