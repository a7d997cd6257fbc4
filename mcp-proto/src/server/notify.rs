//! Change notifications: the application changes the catalog or reports a changed
//! resource, and the machine tells the clients that asked to hear of it, in each era's
//! way; and the 2026-07-28 `subscriptions/listen` streams those go on.
//!
//! # Theory of operation
//!
//! **Changes.** [`Server::add_tool`], [`Server::remove_tool`] (and the same for prompts
//! and resources) change the catalog and report the change of its list;
//! [`Server::list_changed`] reports a change made otherwise (templates, skills);
//! [`Server::resource_updated`] reports that one resource's contents changed. Each report
//! is turned into notifications at once, queued like any output:
//!
//! * legacy era: `notifications/{tools,prompts,resources}/list_changed` to the legacy
//!   session in the machine, when [`ServerConfig::list_changed`](super::ServerConfig::list_changed)
//!   is on (the capabilities then carry `listChanged: true`) and the session finished
//!   `initialize`; `notifications/resources/updated` when it subscribed to the URI;
//! * modern era: the same notifications to every open listen that asked for them, each
//!   with `_meta["io.modelcontextprotocol/subscriptionId"]` naming the listen.
//!
//! While a change log is open ([`Server::record_changes`]) every report is also kept, so
//! that the HTTP endpoint, which swaps one legacy session at a time into the machine, can
//! tell each of its sessions afterwards; a report the log has already is not told again
//! (the listens heard of it, and the sessions will hear of it once).
//!
//! **Listens.** A modern `subscriptions/listen` is validated (`notifications` must be an
//! object of the known members with the right types; at most
//! [`ServerLimits::max_listen_items`](super::ServerLimits::max_listen_items) URIs and as
//! many task ids, each URI at most 8 KiB and all of them at most 128 KiB; `taskIds` without the tasks extension declared
//! is `-32021`), then counted against
//! [`ServerLimits::max_listens`](super::ServerLimits::max_listens) open listens per
//! authenticated principal, and
//! [`ServerLimits::max_anonymous_listens`](super::ServerLimits::max_anonymous_listens) for
//! all unauthenticated clients together (one more is `-32603`). It is never answered at once: its first message is
//! `notifications/subscriptions/acknowledged` with the subset the server honours (list
//! changes only when their capability is advertised and list changes are reported,
//! resource URIs only with resource subscriptions on, task ids only of the principal's own
//! 2026 tasks), followed by one `notifications/tasks` for each of those tasks as it is
//! then (its later changes follow as they happen), and the request stays open. It ends when the client cancels it
//! (`notifications/cancelled` with its id; over HTTP, closing the stream), at the end of
//! input (silently), or when the application ends the subscriptions
//! ([`Server::end_subscriptions`]: each gets the `complete` result carrying its
//! subscription id).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value, json};

use crate::jsonrpc::{ErrorObject, RequestId, codes};
use crate::version::Era;

use super::calls::invalid;
use super::registry::{Prompt, Resource, Tool};
use super::{Params, Server};

/// The `_meta` key naming the listen a notification belongs to.
pub(super) const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// The longest resource URI a listen may name.
const MAX_LISTEN_URI_BYTES: usize = 8 * 1024;

/// The bytes of all the resource URIs one listen may name: what a legacy session may
/// subscribe to (decision 172), where 256 URIs of 8 KiB would be 2 MiB a listen.
const MAX_LISTEN_URIS_BYTES: usize = 128 * 1024;

/// The longest task id a listen may name (longer ones name no task anyway).
const MAX_LISTEN_TASK_ID_BYTES: usize = 256;

/// A list of the catalog that changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ListKind {
    /// `tools/list`.
    Tools,
    /// `prompts/list`.
    Prompts,
    /// `resources/list` (and `resources/templates/list`).
    Resources,
}

impl ListKind {
    /// The notification method for a change of this list.
    #[must_use]
    pub fn method(self) -> &'static str {
        match self {
            ListKind::Tools => "notifications/tools/list_changed",
            ListKind::Prompts => "notifications/prompts/list_changed",
            ListKind::Resources => "notifications/resources/list_changed",
        }
    }

    /// The capability that advertises the list.
    fn capability(self) -> &'static str {
        match self {
            ListKind::Tools => "tools",
            ListKind::Prompts => "prompts",
            ListKind::Resources => "resources",
        }
    }

    /// The member of a listen's `notifications` filter that asks for it.
    fn filter_key(self) -> &'static str {
        match self {
            ListKind::Tools => "toolsListChanged",
            ListKind::Prompts => "promptsListChanged",
            ListKind::Resources => "resourcesListChanged",
        }
    }
}

/// A change reported while a change log was open.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Change {
    List(ListKind),
    Resource(String),
}

/// One open `subscriptions/listen`.
#[derive(Debug)]
pub(super) struct Listen {
    /// The listen request's id (over HTTP, the endpoint's id of it).
    pub id: RequestId,
    /// Who opened it.
    pub principal: Option<String>,
    /// The lists it hears of (agreed ones only).
    lists: Vec<ListKind>,
    /// The resources it hears of.
    uris: Vec<String>,
    /// The 2026 tasks it hears of.
    pub task_ids: Vec<String>,
}

impl Server {
    /// Adds `tool`, or replaces the tool of the same name, and reports the change of the
    /// tools list ([`Server::list_changed`]).
    pub fn add_tool(&mut self, tool: Tool) {
        let tools = &mut self.config.tools;
        match tools.iter_mut().find(|t| t.name == tool.name) {
            Some(t) => *t = tool,
            None => tools.push(tool),
        }
        self.list_changed(ListKind::Tools);
    }

    /// Removes the tool `name`; reports the change when there was one. Its tasks stay.
    pub fn remove_tool(&mut self, name: &str) -> bool {
        let before = self.config.tools.len();
        self.config.tools.retain(|t| t.name != name);
        let removed = self.config.tools.len() < before;
        if removed {
            self.list_changed(ListKind::Tools);
        }
        removed
    }

    /// Adds `prompt`, or replaces the prompt of the same name, and reports the change.
    pub fn add_prompt(&mut self, prompt: Prompt) {
        let prompts = &mut self.config.prompts;
        match prompts.iter_mut().find(|p| p.name == prompt.name) {
            Some(p) => *p = prompt,
            None => prompts.push(prompt),
        }
        self.list_changed(ListKind::Prompts);
    }

    /// Removes the prompt `name`; reports the change when there was one.
    pub fn remove_prompt(&mut self, name: &str) -> bool {
        let before = self.config.prompts.len();
        self.config.prompts.retain(|p| p.name != name);
        let removed = self.config.prompts.len() < before;
        if removed {
            self.list_changed(ListKind::Prompts);
        }
        removed
    }

    /// Adds `resource`, or replaces the resource of the same URI, and reports the change
    /// of the resources list. A replaced resource is also reported as updated
    /// ([`Server::resource_updated`]).
    pub fn add_resource(&mut self, resource: Resource) {
        let uri = resource.uri.clone();
        let resources = &mut self.config.resources;
        let replaced = match resources.iter_mut().find(|r| r.uri == resource.uri) {
            Some(r) => {
                *r = resource;
                true
            }
            None => {
                resources.push(resource);
                false
            }
        };
        self.list_changed(ListKind::Resources);
        if replaced {
            self.resource_updated(&uri);
        }
    }

    /// Removes the static resource `uri`; reports the change when there was one.
    pub fn remove_resource(&mut self, uri: &str) -> bool {
        let before = self.config.resources.len();
        self.config.resources.retain(|r| r.uri != uri);
        let removed = self.config.resources.len() < before;
        if removed {
            self.list_changed(ListKind::Resources);
        }
        removed
    }

    /// Reports that list `kind` changed: the legacy session in the machine gets
    /// `notifications/{kind}/list_changed` (with [`ServerConfig::list_changed`](super::ServerConfig::list_changed)
    /// on, after `initialize`), and so does every open listen that asked for it. Returns
    /// how many notifications were queued. Drain the output afterwards. Within one
    /// [`HttpEndpoint::update_server`](super::http::HttpEndpoint::update_server) a list's
    /// change is told once, however many changes it had.
    pub fn list_changed(&mut self, kind: ListKind) -> usize {
        if !self.log_change(Change::List(kind)) {
            return 0;
        }
        let mut sent = usize::from(self.legacy_list_changed(kind));
        let ids: Vec<RequestId> = (self.listens.iter())
            .filter(|l| l.lists.contains(&kind))
            .map(|l| l.id.clone())
            .collect();
        for id in &ids {
            self.send_to_listen(id, kind.method(), Map::new());
        }
        sent += ids.len();
        sent
    }

    /// Reports that resource `uri` changed: the legacy session in the machine gets
    /// `notifications/resources/updated` when it subscribed to it, and so does every
    /// open listen naming it in `resourceSubscriptions`. Returns whether any
    /// notification was queued. The HTTP endpoint, which keeps each session's state
    /// itself, does this for all of them with
    /// [`HttpEndpoint::resource_updated`](super::http::HttpEndpoint::resource_updated).
    /// Within one [`HttpEndpoint::update_server`](super::http::HttpEndpoint::update_server)
    /// a resource's update is told once.
    pub fn resource_updated(&mut self, uri: &str) -> bool {
        if !self.log_change(Change::Resource(uri.to_owned())) {
            return false;
        }
        let mut sent = self.legacy_resource_updated(uri);
        let ids: Vec<RequestId> = (self.listens.iter())
            .filter(|l| l.uris.iter().any(|u| u == uri))
            .map(|l| l.id.clone())
            .collect();
        for id in &ids {
            let mut params = Map::new();
            params.insert("uri".into(), json!(uri));
            self.send_to_listen(id, "notifications/resources/updated", params);
        }
        sent |= !ids.is_empty();
        sent
    }

    /// Open listens (modern `subscriptions/listen` requests not ended).
    #[must_use]
    pub fn subscriptions(&self) -> usize {
        self.listens.len()
    }

    /// Ends every open listen gracefully: each gets its `complete` result, carrying its
    /// subscription id (as a server shutting down says goodbye). Returns how many.
    pub fn end_subscriptions(&mut self) -> usize {
        let listens = std::mem::take(&mut self.listens);
        for listen in &listens {
            let result = json!({"_meta": {SUBSCRIPTION_ID: listen.id}});
            self.send_modern_result(&listen.id, &result, false);
        }
        listens.len()
    }

    /// Starts (`true`) or stops keeping the changes reported
    /// ([`Server::take_changes`]).
    pub(super) fn record_changes(&mut self, on: bool) {
        self.changes = on.then(Vec::new);
    }

    /// The changes reported since [`Server::record_changes`].
    pub(super) fn take_changes(&mut self) -> Vec<Change> {
        self.changes.take().unwrap_or_default()
    }

    /// Keeps `change` in the open change log. False when the log has it already: it was
    /// told in this batch ([`HttpEndpoint::update_server`](super::http::HttpEndpoint::update_server)),
    /// and telling it again, before anyone could act on the first, would say nothing new.
    fn log_change(&mut self, change: Change) -> bool {
        let Some(log) = &mut self.changes else {
            return true;
        };
        if log.contains(&change) {
            return false;
        }
        log.push(change);
        true
    }

    /// `notifications/{kind}/list_changed` to the legacy session in the machine, if it
    /// is to hear of it. (Also when the list just became empty and its capability is no
    /// longer advertised: the session saw it advertised at `initialize`.)
    pub(super) fn legacy_list_changed(&mut self, kind: ListKind) -> bool {
        let told = self.config.list_changed && self.session.as_ref().is_some_and(|s| s.initialized);
        if told {
            self.send_notification(kind.method(), &json!({}));
        }
        told
    }

    /// Whether the capability of list `kind` is advertised now.
    fn advertises(&self, kind: ListKind) -> bool {
        self.capabilities(Era::Legacy)
            .get(kind.capability())
            .is_some()
    }

    /// Queues `method` for the listen `id`, `params` with its subscription id added.
    pub(super) fn send_to_listen(
        &mut self,
        id: &RequestId,
        method: &str,
        mut params: Map<String, Value>,
    ) {
        let meta = params
            .entry("_meta")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(meta) = meta.as_object_mut() {
            meta.insert(SUBSCRIPTION_ID.into(), json!(id));
        }
        self.send_notification(method, &Value::Object(params));
    }

    /// A modern `subscriptions/listen` (request `id`, client capabilities `caps`): the
    /// listen opens and is acknowledged, or the error to answer.
    pub(super) fn listen(
        &mut self,
        id: &RequestId,
        params: &Params,
        caps: &Value,
    ) -> Result<(), ErrorObject> {
        let Some(filter) = params.get("notifications").and_then(Value::as_object) else {
            return Err(invalid("`notifications` must be an object"));
        };
        let max_items = self.config.limits.max_listen_items;
        let mut asked_lists = Vec::new();
        for kind in [ListKind::Tools, ListKind::Prompts, ListKind::Resources] {
            match filter.get(kind.filter_key()) {
                None | Some(Value::Bool(false)) => {}
                Some(Value::Bool(true)) => asked_lists.push(kind),
                Some(_) => {
                    return Err(invalid(format!(
                        "`notifications.{}` must be a boolean",
                        kind.filter_key()
                    )));
                }
            }
        }
        let uri_bounds = (max_items, MAX_LISTEN_URI_BYTES, MAX_LISTEN_URIS_BYTES);
        let uris = strings(filter, "resourceSubscriptions", uri_bounds)?;
        let id_bounds = (max_items, MAX_LISTEN_TASK_ID_BYTES, usize::MAX);
        let task_ids = strings(filter, "taskIds", id_bounds)?;
        if task_ids.is_some() && !super::tasks::declares_tasks(Some(caps)) {
            return Err(super::tasks::tasks_capability_required());
        }
        if self.listens.iter().any(|l| l.id == *id) {
            return Err(ErrorObject::new(
                codes::INVALID_REQUEST,
                "A subscription with this request id is already open",
            ));
        }
        let limits = &self.config.limits;
        let (max, whose) = match self.principal {
            Some(_) => (limits.max_listens, "per client"),
            None => (
                limits.max_anonymous_listens,
                "for unauthenticated clients together",
            ),
        };
        let open = (self.listens.iter())
            .filter(|l| l.principal == self.principal)
            .count();
        if open >= max {
            return Err(ErrorObject::new(
                codes::INTERNAL_ERROR,
                format!("Too many subscriptions (at most {max} open at once {whose})"),
            ));
        }
        // What the server honours.
        let lists: Vec<ListKind> = if self.config.list_changed {
            asked_lists
                .into_iter()
                .filter(|k| self.advertises(*k))
                .collect()
        } else {
            Vec::new()
        };
        let uris = match uris {
            Some(u)
                if self.config.resource_subscriptions && self.advertises(ListKind::Resources) =>
            {
                Some(u)
            }
            _ => None,
        };
        let task_ids = match task_ids {
            Some(ids) if self.offers_tasks() => Some(self.own_modern_tasks(ids)),
            _ => None,
        };
        let mut agreed = Map::new();
        for kind in &lists {
            agreed.insert(kind.filter_key().into(), json!(true));
        }
        if let Some(u) = &uris {
            agreed.insert("resourceSubscriptions".into(), json!(u));
        }
        if let Some(t) = &task_ids {
            agreed.insert("taskIds".into(), json!(t));
        }
        self.listens.push(Listen {
            id: id.clone(),
            principal: self.principal.clone(),
            lists,
            uris: uris.unwrap_or_default(),
            task_ids: task_ids.unwrap_or_default(),
        });
        let mut ack = Map::new();
        ack.insert("notifications".into(), Value::Object(agreed));
        self.send_to_listen(id, "notifications/subscriptions/acknowledged", ack);
        self.show_listened_tasks(id);
        Ok(())
    }

    /// After the acknowledgement of listen `id`: each task it covers as it is now, so
    /// that a change made before the listen opened (a task that ended, or came to need
    /// input, while nobody listened) is not lost to the client waiting on this stream.
    fn show_listened_tasks(&mut self, id: &RequestId) {
        let Some(listen) = self.listens.iter().find(|l| l.id == *id) else {
            return;
        };
        if listen.task_ids.is_empty() {
            return;
        }
        // The tasks named, oldest first.
        let named: BTreeMap<u64, &super::tasks::ServerTask> = (listen.task_ids.iter())
            .filter_map(|id| self.tasks.get(id))
            .map(|t| (t.seq(), t))
            .collect();
        let mut shown = Vec::new();
        let mut delivered = BTreeSet::new();
        for task in named.into_values() {
            if let Value::Object(detailed) = task.detailed(&self.tasks) {
                if task.terminal() {
                    delivered.insert(task.id().to_owned());
                }
                shown.push(detailed);
            }
        }
        self.tasks.mark_delivered(&delivered);
        for params in shown {
            self.send_to_listen(id, "notifications/tasks", params);
        }
    }

    /// Open listens naming `uri` in `resourceSubscriptions`.
    pub(super) fn listens_naming(&self, uri: &str) -> usize {
        (self.listens.iter())
            .filter(|l| l.uris.iter().any(|u| u == uri))
            .count()
    }

    /// `notifications/cancelled` for `id`: the listen of that id ends (nothing is sent).
    pub(super) fn cancel_listen(&mut self, id: &RequestId) {
        self.listens.retain(|l| l.id != *id);
    }
}

/// The optional string array `key` of a listen filter: at most `max` strings of at most
/// `max_bytes` each, duplicates dropped.
/// `notifications.{key}` as distinct strings, within `(items, bytes of one, bytes of
/// all)`.
fn strings(
    filter: &Map<String, Value>,
    key: &str,
    (max, max_bytes, max_total): (usize, usize, usize),
) -> Result<Option<Vec<String>>, ErrorObject> {
    let Some(value) = filter.get(key) else {
        return Ok(None);
    };
    let Some(items) = value.as_array() else {
        return Err(invalid(format!(
            "`notifications.{key}` must be an array of strings"
        )));
    };
    if items.len() > max {
        return Err(invalid(format!(
            "`notifications.{key}` names more than {max} items"
        )));
    }
    let mut out: Vec<String> = Vec::with_capacity(items.len());
    // Duplicates are found in a set: comparing each item with every earlier one was up
    // to 32,640 comparisons of 8 KiB strings for one request at the bounds.
    let mut seen = std::collections::BTreeSet::new();
    let mut total = 0;
    for item in items {
        let Some(s) = item.as_str() else {
            return Err(invalid(format!(
                "`notifications.{key}` must be an array of strings"
            )));
        };
        if s.len() > max_bytes {
            return Err(invalid(format!(
                "`notifications.{key}` has an item longer than {max_bytes} bytes"
            )));
        }
        if seen.insert(s) {
            total += s.len();
            if total > max_total {
                return Err(invalid(format!(
                    "`notifications.{key}` takes more than {max_total} bytes"
                )));
            }
            out.push(s.to_owned());
        }
    }
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use serde_json::{Map, Value, json};

    fn filter(value: Value) -> Map<String, Value> {
        let Value::Object(map) = value else {
            unreachable!("an object")
        };
        map
    }

    #[test]
    fn a_filter_keeps_the_first_of_each_string_in_order() {
        let f = filter(json!({"uris": ["b", "a", "b", "c", "a"]}));
        assert_eq!(
            super::strings(&f, "uris", (8, 16, usize::MAX)).unwrap(),
            Some(vec!["b".to_owned(), "a".to_owned(), "c".to_owned()])
        );
        assert_eq!(
            super::strings(&f, "other", (8, 16, usize::MAX)).unwrap(),
            None
        );
        // At the bounds: 256 distinct strings of 8 KiB, then each again.
        let distinct: Vec<String> = (0..256).map(|i| format!("{i:08192}")).collect();
        let twice: Vec<&String> = distinct.iter().chain(&distinct).collect();
        let f = filter(json!({ "uris": twice }));
        assert_eq!(
            super::strings(&f, "uris", (512, 8192, usize::MAX)).unwrap(),
            Some(distinct)
        );
        assert!(super::strings(&f, "uris", (511, 8192, usize::MAX)).is_err());
    }
}
