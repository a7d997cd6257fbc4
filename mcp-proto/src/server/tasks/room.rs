//! Room for tasks: the bounds on how many tasks are kept ([`MAX_TASKS`] per requestor,
//! [`MAX_TASKS_PER_PRINCIPAL`], [`MAX_STORED_TASKS`]) and on the bytes they keep
//! (`ServerLimits::max_task_bytes` and its per-principal share), read from the store's
//! indexes. A new task makes room by dropping the oldest tasks whose end reached their
//! owner, or is refused; an outcome larger than what the bounds leave is kept as an
//! error naming its size.

use crate::jsonrpc::{ErrorObject, codes};

use super::super::ServerLimits;
use super::index::Tally;
use super::{MAX_STORED_TASKS, MAX_TASKS, MAX_TASKS_PER_PRINCIPAL, Owner, TaskStore};

impl TaskStore {
    /// Makes room for one more task of `owner` by dropping the oldest ended task (of
    /// `owner` when it is at [`MAX_TASKS`], of its principal when that is at
    /// [`MAX_TASKS_PER_PRINCIPAL`] or a quarter of `max_bytes`, of anyone when the
    /// server is at
    /// [`MAX_STORED_TASKS`] or past `max_bytes`). Only tasks whose end reached their
    /// owner can go: a running task, or one whose result nobody fetched yet, is never
    /// dropped, and with no task left that may go the new one is refused. Otherwise a
    /// requestor (an anonymous legacy session, who all share one principal) could erase
    /// another's finished work by starting tasks of its own, and a client with many tasks
    /// lost a result between seeing its task end and fetching it; a requestor can hold
    /// slots only as long as tasks live.
    pub(super) fn make_room(
        &mut self,
        owner: &Owner,
        bytes: usize,
        limits: &ServerLimits,
    ) -> Result<(), ErrorObject> {
        let (max_bytes, share) = (limits.max_task_bytes, limits.max_task_bytes_per_principal);
        // Only a task whose end reached its owner: not even the requestor's own, whose
        // result it may be about to fetch (it polled the status, the result is next).
        let principal = &owner.principal;
        let oldest_of = |t: Option<&Tally>| t.and_then(|t| t.may_go.first().copied());
        let mut held = self.index.bytes;
        let mut theirs = self.principal_bytes(principal.as_deref());
        while theirs + bytes > share {
            let oldest = oldest_of(self.index.principals.get(principal));
            let Some(dropped) = oldest.and_then(|seq| self.remove(seq)) else {
                return Err(too_much_principal_data(share));
            };
            theirs = theirs.saturating_sub(dropped);
            held = held.saturating_sub(dropped);
        }
        while held + bytes > max_bytes {
            let oldest = self.index.may_go.first().copied();
            let Some(dropped) = oldest.and_then(|seq| self.remove(seq)) else {
                return Err(too_much_task_data(max_bytes));
            };
            held = held.saturating_sub(dropped);
        }
        let mine = self.index.owners.get(owner).map_or(0, |t| t.all.len());
        if mine >= MAX_TASKS
            && (oldest_of(self.index.owners.get(owner)).and_then(|seq| self.remove(seq))).is_none()
        {
            return Err(ErrorObject::new(
                codes::INTERNAL_ERROR,
                format!(
                    "Too many tasks running ({MAX_TASKS} at most per requestor); try again later"
                ),
            ));
        }
        let theirs = self
            .index
            .principals
            .get(principal)
            .map_or(0, |t| t.all.len());
        if theirs >= MAX_TASKS_PER_PRINCIPAL
            && (oldest_of(self.index.principals.get(principal)).and_then(|seq| self.remove(seq)))
                .is_none()
        {
            return Err(ErrorObject::new(
                codes::INTERNAL_ERROR,
                format!(
                    "Too many tasks running ({MAX_TASKS_PER_PRINCIPAL} at most per principal, \
                     over all its sessions); try again later"
                ),
            ));
        }
        if self.tasks.len() >= MAX_STORED_TASKS
            && (self.index.may_go.first().copied())
                .and_then(|seq| self.remove(seq))
                .is_none()
        {
            return Err(ErrorObject::new(
                codes::INTERNAL_ERROR,
                format!("Too many tasks running ({MAX_STORED_TASKS} at most); try again later"),
            ));
        }
        Ok(())
    }

    /// The bytes the tasks of `principal` keep.
    pub(super) fn principal_bytes(&self, principal: Option<&str>) -> usize {
        (self.index.principals.get(&principal.map(str::to_owned))).map_or(0, |t| t.bytes)
    }

    /// The bytes all tasks keep.
    pub(super) fn held_bytes(&self) -> usize {
        self.index.bytes
    }
}

/// What an outcome may take when the tasks keep `held` bytes without it, `theirs` of them
/// its principal's: what both bounds on task data leave.
pub(super) fn outcome_room(limits: &ServerLimits, held: usize, theirs: usize) -> usize {
    let total = limits.max_task_bytes.saturating_sub(held);
    let share = limits.max_task_bytes_per_principal.saturating_sub(theirs);
    total.min(share)
}

/// The `-32603` for task data past `ServerLimits::max_task_bytes_per_principal`
/// (`share`).
pub(super) fn too_much_principal_data(share: usize) -> ErrorObject {
    ErrorObject::new(
        codes::INTERNAL_ERROR,
        format!(
            "Too much task data held ({share} bytes at most per principal, over all its \
             sessions); try again later"
        ),
    )
}

/// The `-32603` for task data past `ServerLimits::max_task_bytes` (`max_bytes`).
pub(super) fn too_much_task_data(max_bytes: usize) -> ErrorObject {
    ErrorObject::new(
        codes::INTERNAL_ERROR,
        format!("Too much task data held ({max_bytes} bytes at most); try again later"),
    )
}
