//! The wall of the machines' timeline: turns the OS monotonic clock into
//! [`mcp_proto::Instant`]s and back.
//!
//! The machines count time from an origin the caller picks. Here that origin is the first
//! time anything in this process asked for the time, so instants from every connection
//! and both adapters share one timeline and can be compared.

use std::sync::OnceLock;
use std::time::Duration;

static ORIGIN: OnceLock<std::time::Instant> = OnceLock::new();

fn origin() -> std::time::Instant {
    *ORIGIN.get_or_init(std::time::Instant::now)
}

/// Now, on the machines' timeline.
#[must_use]
pub fn now() -> mcp_proto::Instant {
    let origin = origin();
    mcp_proto::Instant::from_elapsed(std::time::Instant::now().saturating_duration_since(origin))
}

/// The OS instant of a machine instant (for timers that want one), saturating far in the
/// future.
#[must_use]
pub fn to_std(at: mcp_proto::Instant) -> std::time::Instant {
    let origin = origin();
    let far = origin + Duration::from_secs(100 * 365 * 24 * 3600);
    origin
        .checked_add(at.elapsed_since_origin())
        .map_or(far, |t| t.min(far))
}

/// The OS instant `timeout` from now, saturating far in the future: a caller's
/// `Duration::MAX` means no limit, not an instant past the end of the clock.
#[must_use]
pub fn std_after(timeout: Duration) -> std::time::Instant {
    let now = std::time::Instant::now();
    let far = now + Duration::from_secs(100 * 365 * 24 * 3600);
    now.checked_add(timeout).map_or(far, |t| t.min(far))
}

/// The machine instant of an OS instant.
#[must_use]
pub fn from_std(at: std::time::Instant) -> mcp_proto::Instant {
    mcp_proto::Instant::from_elapsed(at.saturating_duration_since(origin()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_moves_forward() {
        let a = now();
        let b = now();
        assert!(b >= a);
        let std_b = to_std(b);
        assert_eq!(from_std(std_b), b);
        let never = to_std(a + Duration::MAX);
        assert!(never > std::time::Instant::now() + Duration::from_secs(3600));
        let never = std_after(Duration::MAX);
        assert!(never > std::time::Instant::now() + Duration::from_secs(3600));
        assert!(std_after(Duration::ZERO) <= std::time::Instant::now());
    }
}
