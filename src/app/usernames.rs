//! The steps that keep usernames unique, for C1 (create and edit user).
//!
//! A name is held by a reservation item in a partition of its own (see
//! [`crate::model::usernames`]), so a rename touches three partitions: the new name's, the
//! user's, the old name's. No transaction spans them, so each step is idempotent and they run in
//! an order where a crash between any two leaves every user with a name they hold, and no name
//! held for good by nobody:
//!
//! 1. [`claim`] the new name (create its reservation; retry, or take over an abandoned one).
//! 2. Write the user with it (conditional on the version read first, so that concurrent renames
//!    of one user take turns), in [`super::users`].
//! 3. [`release`] the old name, only if still the user's and unchanged since before step 2.
//!
//! After a crash in 1–2 the claim is the user's own: a retry goes on from it, and anyone else
//! takes it once it is older than [`CLAIM_GRACE`]. After a crash in 2–3 the old name is held by
//! nobody who shows it: `UsersChangeFeed` deletes it (the new reservation says which name it
//! `releases`), and anyone may take it over once its claim is older than [`CLAIM_GRACE`].
//!
//! [`CLAIM_GRACE`]: crate::model::usernames::CLAIM_GRACE

use super::{Clash, Contended};
use std::time::Instant;

use time::OffsetDateTime;

use super::{AppError, AppResult};
use crate::cosmos::{Container, Store, StoreError, Versioned, WriteOp, retry_pause};
use crate::model::usernames::{
    MAX_CLAIM_AGE_AT_WRITE, Reservation, ReservationState, is_left_behind, new_reservation,
    normalize_username, reclaimed, reservation_id, reservation_state,
};
use crate::model::{self, User};

/// How often a claim is tried when others keep changing the reservation between its read and
/// its write: each loser of a race tries again and then sees the winner's claim.
const MAX_CLAIM_ATTEMPTS: usize = 8;

/// Proof of step 1: the caller's claim, and when it was made.
pub(crate) struct Claim {
    claimed: Instant,
    /// The name the reservation says its owner gave up (normalized): this claim's, or, when it
    /// gives up none, that of an earlier attempt that stopped before releasing it.
    pub releases: Option<String>,
}

impl Claim {
    /// Whether the user may still be written with the claimed name (step 2): an older claim is
    /// made again first, so that nobody can have taken it over as abandoned meanwhile.
    pub(crate) fn is_fresh(&self) -> bool {
        self.claimed.elapsed() < MAX_CLAIM_AGE_AT_WRITE
    }
}

/// Step 1: claims `username` for `user_id`, recording that the claim gives up the name
/// `releases` (normalized). Idempotent: a claim the user already has is renewed. 409 when
/// another user holds the name.
pub(crate) async fn claim(
    store: &Store,
    user_id: &str,
    username: &str,
    releases: Option<String>,
) -> AppResult<Claim> {
    let normalized = normalize_username(username);
    let id = reservation_id(&normalized);
    for attempt in 0..MAX_CLAIM_ATTEMPTS {
        let claimed = Instant::now();
        let claimed_at = model::now();
        let fresh =
            new_reservation(normalized.clone(), user_id, claimed_at.clone(), releases.clone());
        match store.create(Container::Users, &id, &fresh).await {
            Ok(()) => return Ok(Claim { claimed, releases: fresh.releases }),
            Err(StoreError::Conflict) => {}
            Err(other) => return Err(other.into()),
        }
        // Released since the create failed: create it again.
        let Some(found) = store.read_versioned::<Reservation>(Container::Users, &id, &id).await?
        else {
            continue;
        };
        let owner_username = if found.item.owner_id == user_id {
            None
        } else {
            let owner = &found.item.owner_id;
            store.read::<User>(Container::Users, owner, owner).await?.map(|owner| owner.username)
        };
        let claim = match reservation_state(
            &found.item,
            user_id,
            owner_username.as_deref(),
            OffsetDateTime::now_utc(),
        ) {
            ReservationState::Held => return Err(taken(username)),
            ReservationState::Ours => reclaimed(&found.item, claimed_at, releases.clone()),
            ReservationState::Abandoned => fresh,
        };
        // Conditional: of two claimants taking over one abandoned name, one wins; the other
        // reads the winner's claim next time round.
        match store.replace(Container::Users, &id, &id, &claim, Some(&found.etag)).await {
            Ok(()) => return Ok(Claim { claimed, releases: claim.releases }),
            Err(StoreError::PreconditionFailed | StoreError::NotFound) => {
                tokio::time::sleep(retry_pause(attempt)).await
            }
            Err(other) => return Err(other.into()),
        }
    }
    Err(AppError::Busy(Contended::UsernameClaimed(username.to_owned())))
}

/// The reservation of the normalized name `name`, with its etag, for a later [`release`]: read
/// before step 2, so that a claim of it made after that (by this user renaming back) changes the
/// etag and is not released.
pub(crate) async fn reservation_of(
    store: &Store,
    name: &str,
) -> Result<Option<Versioned<Reservation>>, StoreError> {
    let id = reservation_id(name);
    store.read_versioned(Container::Users, &id, &id).await
}

/// Step 3: deletes `reservation` if it is `user_id`'s and unchanged since it was read. Anything
/// else (gone, claimed again, taken over) is left as it is: its new holder has it.
pub(crate) async fn release(
    store: &Store,
    user_id: &str,
    reservation: Versioned<Reservation>,
) -> Result<(), StoreError> {
    if reservation.item.owner_id != user_id {
        return Ok(());
    }
    let id = reservation.item.id;
    let delete = WriteOp::Delete { id: id.clone(), if_match: Some(reservation.etag) };
    match store.execute_write(Container::Users, &id, delete).await {
        Ok(()) | Err(StoreError::NotFound | StoreError::PreconditionFailed) => Ok(()),
        Err(other) => Err(other),
    }
}

/// Gives up a claim a C1 create made for nothing (the caller already has a user), unless it is
/// the name that user shows.
pub(crate) async fn abandon(
    store: &Store,
    user_id: &str,
    username: &str,
) -> Result<(), StoreError> {
    let normalized = normalize_username(username);
    let existing = store.read::<User>(Container::Users, user_id, user_id).await?;
    if existing.is_some_and(|user| normalize_username(&user.username) == normalized) {
        return Ok(());
    }
    match reservation_of(store, &normalized).await? {
        Some(reservation) => release(store, user_id, reservation).await,
        None => Ok(()),
    }
}

/// Finishes what a C1 write may have left undone, for `UsersChangeFeed` (see
/// [`super::copies::user_changed`]). It reserves the user's current name if nobody has: after a
/// crash, or for a user from before reservations (`handler rebuild-copies` replays every user
/// through here). It deletes the reservation of the name the current one replaced if the user
/// still holds it. One point read when all is in order (two for a renamed user: the name it
/// gave up is looked at again).
pub(crate) async fn tidy_reservations(store: &Store, user: &User) -> Result<(), StoreError> {
    let name = normalize_username(&user.username);
    let id = reservation_id(&name);
    match store.read::<Reservation>(Container::Users, &id, &id).await? {
        None => {
            // Only the name the user shows now: a late delivery of an older version must not
            // reserve a name given up since. (A read only on this rare path.)
            let current =
                store.read::<User>(Container::Users, &user.user_id, &user.user_id).await?;
            if current.is_none_or(|current| normalize_username(&current.username) != name) {
                return Ok(());
            }
            let reservation = new_reservation(name, &user.user_id, model::now(), None);
            match store.create(Container::Users, &id, &reservation).await {
                // Claimed meanwhile: by the user (a rename), or by another, who was first.
                Ok(()) | Err(StoreError::Conflict) => {}
                Err(other) => return Err(other),
            }
        }
        Some(reservation) if reservation.owner_id == user.user_id => {
            if let Some(released) = reservation.releases {
                release_left_behind(store, user, &released).await?;
            }
        }
        // Two users with one name, from before names were unique: the other holds it; this
        // user keeps showing it until they rename.
        Some(reservation) => {
            tracing::warn!(
                user = user.user_id,
                holder = reservation.owner_id,
                "a user shows a username another user holds"
            )
        }
    }
    Ok(())
}

/// Deletes the reservation of the normalized name `released` if `user` left it behind, only if
/// unchanged since read (a claim of it made meanwhile changes its etag).
async fn release_left_behind(store: &Store, user: &User, released: &str) -> Result<(), StoreError> {
    let Some(found) = reservation_of(store, released).await? else { return Ok(()) };
    if is_left_behind(&found.item, &user.user_id, &user.username, OffsetDateTime::now_utc()) {
        release(store, &user.user_id, found).await?;
    }
    Ok(())
}

fn taken(username: &str) -> AppError {
    AppError::Conflict(Clash::UsernameTaken(username.to_owned()))
}
