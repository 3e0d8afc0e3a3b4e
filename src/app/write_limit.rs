//! How many writes one user may send: a token bucket per user, in this instance's memory.
//!
//! Every write one account sends costs request units (on serverless Cosmos DB, money) and takes
//! a share of the database's throughput that other users then meet as throttling. A person
//! writes a few posts, comments and likes a minute; a script writes as fast as the database
//! accepts. The bucket lets a person's burst through (a few likes in a row) and holds a script
//! to the steady rate. Each user has `burst` writes at once, refilled at `per_minute`. Past it,
//! the write is refused before it reaches the database, saying when the next one will be
//! accepted. Reads are never counted.
//!
//! The buckets live in the instance that serves the write: on Azure, each instance of the function
//! app limits on its own, so a user spread over `n` instances may write up to `n` times as fast.
//! That keeps the check off the database (a shared counter would cost a write per write); the
//! limit is a guard against floods, not a quota.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::config::WriteLimitSetting;

/// How many users' buckets are kept before the full ones are forgotten (a full bucket is the
/// same as none).
const SWEEP_ABOVE: usize = 10_000;

/// The buckets, by user id.
pub(crate) struct WriteLimit {
    setting: WriteLimitSetting,
    buckets: Mutex<Buckets>,
}

/// Every user's bucket, and how many there may be before the next sweep. After a sweep that
/// left many (that many users writing at once), the next waits until they have doubled. So a
/// write does not walk them all each time.
struct Buckets {
    by_user: HashMap<String, Bucket>,
    sweep_above: usize,
}

/// A user's bucket: how many writes are left, as of when.
#[derive(Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

impl WriteLimit {
    pub(crate) fn new(setting: WriteLimitSetting) -> WriteLimit {
        WriteLimit {
            setting,
            buckets: Mutex::new(Buckets { by_user: HashMap::new(), sweep_above: SWEEP_ABOVE }),
        }
    }

    /// Counts one write by `user` at `now`, or refuses it with how long until one is accepted.
    pub(crate) fn admit(&self, user: &str, now: Instant) -> Result<(), Duration> {
        let burst = f64::from(self.setting.burst.max(1));
        let per_second = f64::from(self.setting.per_minute.max(1)) / 60.0;
        let mut buckets = self.buckets.lock().expect("never poisoned");
        let Buckets { by_user, sweep_above } = &mut *buckets;
        if by_user.len() > *sweep_above {
            by_user.retain(|_, bucket| refilled(*bucket, now, per_second, burst) < burst);
            *sweep_above = SWEEP_ABOVE.max(by_user.len() * 2);
        }
        if !by_user.contains_key(user) {
            by_user.insert(user.to_owned(), Bucket { tokens: burst, at: now });
        }
        let bucket = by_user.get_mut(user).expect("inserted above");
        let tokens = refilled(*bucket, now, per_second, burst);
        if tokens >= 1.0 {
            *bucket = Bucket { tokens: tokens - 1.0, at: now };
            Ok(())
        } else {
            *bucket = Bucket { tokens, at: now };
            Err(Duration::from_secs_f64((1.0 - tokens) / per_second))
        }
    }
}

/// What `bucket` holds at `now`, refilled at `per_second` up to `burst`.
fn refilled(bucket: Bucket, now: Instant, per_second: f64, burst: f64) -> f64 {
    let elapsed = now.saturating_duration_since(bucket.at).as_secs_f64();
    (bucket.tokens + elapsed * per_second).min(burst)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_user_gets_a_burst_then_the_rate() {
        let limit = WriteLimit::new(WriteLimitSetting { per_minute: 60, burst: 3 });
        let start = Instant::now();
        for _ in 0..3 {
            assert_eq!(limit.admit("alice", start), Ok(()));
        }
        let wait = limit.admit("alice", start).unwrap_err();
        assert!(wait > Duration::from_millis(990) && wait <= Duration::from_secs(1), "{wait:?}");
        assert_eq!(limit.admit("bob", start), Ok(()), "another user is not limited");
        // One a second comes back; the refusal consumed nothing.
        assert_eq!(limit.admit("alice", start + Duration::from_secs(1)), Ok(()));
        assert!(limit.admit("alice", start + Duration::from_secs(1)).is_err());
        // A long pause refills the burst, no more.
        let later = start + Duration::from_secs(3600);
        for _ in 0..3 {
            assert_eq!(limit.admit("alice", later), Ok(()));
        }
        assert!(limit.admit("alice", later).is_err());
    }

    #[test]
    fn only_full_buckets_are_forgotten() {
        let limit = WriteLimit::new(WriteLimitSetting { per_minute: 60, burst: 2 });
        let start = Instant::now();
        for user in 0..=SWEEP_ABOVE {
            limit.admit(&user.to_string(), start).unwrap();
        }
        // An hour on, every bucket is full again: the next write sweeps them all away.
        limit.admit("late", start + Duration::from_secs(3600)).unwrap();
        let buckets = limit.buckets.lock().unwrap();
        assert_eq!(buckets.by_user.len(), 1);
        assert_eq!(buckets.sweep_above, SWEEP_ABOVE);
        drop(buckets);
        // Buckets still refilling are kept, and the next sweep waits for twice as many.
        let busy = WriteLimit::new(WriteLimitSetting { per_minute: 60, burst: 2 });
        for user in 0..=SWEEP_ABOVE + 1 {
            busy.admit(&user.to_string(), start).unwrap();
        }
        let buckets = busy.buckets.lock().unwrap();
        assert_eq!(buckets.by_user.len(), SWEEP_ABOVE + 2);
        assert_eq!(buckets.sweep_above, 2 * (SWEEP_ABOVE + 1));
    }
}
