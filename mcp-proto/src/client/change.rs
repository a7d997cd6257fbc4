//! Typed views of the server's change notifications: the `list_changed` family and
//! `notifications/resources/updated` (2025-06-18 and 2025-11-25 unsolicited; in
//! 2026-07-28 on a `subscriptions/listen` stream).

use serde::Deserialize;

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
