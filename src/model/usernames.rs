//! Unique usernames: how names are compared, and the reservation items that make them unique.
//!
//! Cosmos DB enforces uniqueness only inside one logical partition. So a name is held by a
//! reservation item whose id, and partition key, is derived from the name itself. Two users
//! claiming one name create the same item in the same partition, and the store lets one create
//! win. Reservations live in `users` (partition `/userId`: the item's `userId` is its own id),
//! so nothing new is deployed. The steps that claim and release them are in
//! `src/app/usernames.rs`; everything here is a pure rule.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// How long a reservation whose owner does not (yet) show its name counts as a claim in
/// progress that nobody else may take. It must exceed how long a claimant can take from its
/// claim to writing its user (step 2). A claimant that finds its claim older than
/// [`MAX_CLAIM_AGE_AT_WRITE`] claims again before writing. That write is bounded by the store's
/// 30 s call timeout, so a claim is never taken over while its user write may still land. What
/// is left of the 5 minutes covers clocks that differ between instances (the age is judged on
/// another instance's clock than the one that stamped it).
pub(crate) const CLAIM_GRACE: time::Duration = time::Duration::minutes(5);

/// The oldest a claim may be when its claimant writes the user with the name (step 2); an older
/// one is claimed again first. Well below [`CLAIM_GRACE`], see there.
pub(crate) const MAX_CLAIM_AGE_AT_WRITE: std::time::Duration = std::time::Duration::from_secs(120);

/// The prefix of every reservation's id. User ids are printable ASCII (principal ids), so no
/// user can have an id, and so a partition, that starts with `§`.
pub(crate) const RESERVATION_ID_PREFIX: &str = "§username-";

/// The form in which two usernames are the same name: NFKC, then Unicode lowercase, then NFKC
/// again (lowercasing can un-normalize), without default-ignorable code points, with runs of
/// whitespace as one space and none at either end. This approximates Unicode's NFKC_Casefold
/// (which also removes the default ignorables): "Alice", "ALICE", "ａｌｉｃｅ" (full width),
/// "al\u{200B}ice" and " alice " are one name, as are "José" composed and decomposed. Where
/// lowercase and case folding differ it keeps them apart: "ß" and "ss" are two names, as are "ς"
/// and "σ" in the middle of a word (Rust's lowercase of a final capital sigma is "ς").
///
/// The rule is stored with every reservation (as its `name`) and decides its id: changing it
/// would orphan every reservation made before (a migration would have to re-reserve them).
pub fn normalize_username(name: &str) -> String {
    let nfkc = icu_normalizer::ComposingNormalizerBorrowed::new_nfkc();
    let lowered = nfkc.normalize(name).to_lowercase();
    let folded = nfkc.normalize(&lowered);
    let visible: String = folded.chars().filter(|&c| !is_default_ignorable(c)).collect();
    visible.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Unicode's Default_Ignorable_Code_Point (DerivedCoreProperties 15.1): characters that render
/// as nothing, so "al\u{200B}ice" shows as "alice" and must be the same name (and a name of
/// only these shows nothing, which C1 refuses).
pub(crate) fn is_default_ignorable(c: char) -> bool {
    matches!(c,
        '\u{00AD}' | '\u{034F}' | '\u{061C}' | '\u{115F}'..='\u{1160}' | '\u{17B4}'..='\u{17B5}' | '\u{180B}'..='\u{180F}'
        | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{206F}' | '\u{3164}' | '\u{FE00}'..='\u{FE0F}'
        | '\u{FEFF}' | '\u{FFA0}' | '\u{FFF0}'..='\u{FFF8}' | '\u{1BCA0}'..='\u{1BCA3}' | '\u{1D173}'..='\u{1D17A}'
        | '\u{E0000}'..='\u{E0FFF}')
}

/// The id (and partition key) of the reservation of a normalized name. A Cosmos DB id cannot
/// hold `/ \ ? #` and is at most 255 characters, and a name may hold anything, so the id carries
/// the name's SHA-256 in hex (74 characters in all), not the name.
pub fn reservation_id(normalized: &str) -> String {
    let digest = Sha256::digest(normalized.as_bytes());
    format!("{RESERVATION_ID_PREFIX}{}", super::hex(&digest))
}

/// The `type` of a reservation item (users and post copies share the container; the
/// change-feed functions and Q3 tell them apart by it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReservationType {
    /// A username's reservation.
    Username,
}

/// A username reservation, in `users`, in a partition of its own: whoever it names as `ownerId`
/// holds the name while [`reservation_state`] says so.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Reservation {
    /// [`reservation_id`] of `name`.
    pub id: String,
    /// The same as `id`: the container's partition key.
    pub user_id: String,
    /// `username`.
    #[serde(rename = "type")]
    pub item_type: ReservationType,
    /// The normalized name ([`normalize_username`]).
    pub name: String,
    /// The user who holds, or is claiming, the name.
    pub owner_id: String,
    /// When the owner last claimed it (RFC 3339, the claimant's clock): a younger claim than
    /// [`CLAIM_GRACE`] may be one in progress.
    pub claimed_at: String,
    /// The normalized name the owner gave up by taking this one, whose reservation the
    /// change feed deletes if a crash left it behind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub releases: Option<String>,
}

/// A claim of `normalized` by `owner_id` at `now` (a [`crate::model::now`] string), giving up
/// the name `releases`.
pub(crate) fn new_reservation(
    normalized: String,
    owner_id: &str,
    claimed_at: String,
    releases: Option<String>,
) -> Reservation {
    let id = reservation_id(&normalized);
    Reservation {
        user_id: id.clone(),
        id,
        item_type: ReservationType::Username,
        name: normalized,
        owner_id: owner_id.to_owned(),
        claimed_at,
        releases,
    }
}

/// `reservation` claimed again by its own owner at `claimed_at`: fresh, so that nobody takes it
/// over and no release planned before this claim deletes it (it has a new etag). A claim that
/// gives up no name keeps the name an earlier claim gave up, still to be released.
pub(crate) fn reclaimed(
    reservation: &Reservation,
    claimed_at: String,
    releases: Option<String>,
) -> Reservation {
    Reservation {
        claimed_at,
        releases: releases.or_else(|| reservation.releases.clone()),
        ..reservation.clone()
    }
}

/// What a claimant may do with a reservation that exists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ReservationState {
    /// The claimant owns it: its own name, or a claim of an earlier attempt.
    Ours,
    /// Another user holds the name: they show it, or are claiming it right now.
    Held,
    /// Its owner does not show the name (renamed, or a claim that crashed before writing the
    /// user), and the claim is older than [`CLAIM_GRACE`]: anyone may take it over.
    Abandoned,
}

/// Whether `claimant` may take the name `reservation` holds, given its owner's current
/// username (`None`: the owner has no user) and the time.
pub(crate) fn reservation_state(
    reservation: &Reservation,
    claimant: &str,
    owner_username: Option<&str>,
    now: OffsetDateTime,
) -> ReservationState {
    if reservation.owner_id == claimant {
        return ReservationState::Ours;
    }
    if owner_username.is_some_and(|username| normalize_username(username) == reservation.name) {
        return ReservationState::Held;
    }
    if is_young(reservation, now) { ReservationState::Held } else { ReservationState::Abandoned }
}

/// Whether the claim may still be in progress. A `claimedAt` that does not parse counts as old:
/// the application never writes one.
fn is_young(reservation: &Reservation, now: OffsetDateTime) -> bool {
    OffsetDateTime::parse(&reservation.claimed_at, &Rfc3339)
        .is_ok_and(|claimed| now - claimed < CLAIM_GRACE)
}

/// The name a rename from `old` to `new` gives up (normalized), if any: none when the two are the
/// same name (a change of case or form keeps the reservation).
pub(crate) fn released_name(old: &str, new: &str) -> Option<String> {
    let (old, new) = (normalize_username(old), normalize_username(new));
    (old != new).then_some(old)
}

/// Whether the change feed may delete `reservation` as left behind by `user_id`, whose current
/// username is `current_username`. It may when the reservation is theirs, they no longer show
/// it, and it is no claim in progress (they may be renaming back to it right now).
pub(crate) fn is_left_behind(
    reservation: &Reservation,
    user_id: &str,
    current_username: &str,
    now: OffsetDateTime,
) -> bool {
    reservation.owner_id == user_id
        && normalize_username(current_username) != reservation.name
        && !is_young(reservation, now)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::creation_date;
    use time::macros::datetime;

    #[test]
    fn names_that_look_the_same_normalize_the_same() {
        let alice = normalize_username("alice");
        for same in ["Alice", "ALICE", "ａｌｉｃｅ", "al\u{200B}ice", " alice ", "alice\u{FE0F}"]
        {
            assert_eq!(normalize_username(same), alice, "{same:?}");
        }
        assert_eq!(
            normalize_username("José"),
            normalize_username("Jose\u{301}"),
            "composed and decomposed"
        );
        assert_eq!(normalize_username("JOSÉ"), normalize_username("jose\u{301}"));
        assert_eq!(normalize_username("\u{212A}elvin"), "kelvin", "the Kelvin sign is a K");
        assert_eq!(normalize_username("ﬁsh"), "fish", "a ligature is its letters");
        assert_eq!(normalize_username("Alice   Liddell"), "alice liddell");
        assert_eq!(
            normalize_username("Alice\u{3000}Liddell"),
            "alice liddell",
            "an ideographic space is a space"
        );
        assert_eq!(
            normalize_username("ΟΔΟΣ"),
            "\u{3bf}\u{3b4}\u{3bf}\u{3c2}",
            "a final capital sigma is a final sigma"
        );
    }

    #[test]
    fn different_names_stay_different() {
        assert_ne!(normalize_username("alice"), normalize_username("alice2"));
        assert_ne!(normalize_username("alice"), normalize_username("alíce"));
        assert_ne!(normalize_username("Alice Liddell"), normalize_username("AliceLiddell"));
        // Lowercase, not full case folding: documented above.
        assert_ne!(normalize_username("straße"), normalize_username("STRASSE"));
        assert_eq!(normalize_username("STRASSE"), "strasse");
    }

    #[test]
    fn the_normal_form_is_stable() {
        for name in
            ["Alice", "ＡＬＩＣＥ", "ǅemal", "ﬃ", "Ⅻ", "㎒", "ΣΑΣ", "İstanbul", "👩\u{200D}💻 dev"]
        {
            let once = normalize_username(name);
            assert_eq!(normalize_username(&once), once, "{name:?}");
        }
    }

    #[test]
    fn a_reservation_id_is_a_valid_cosmos_id_whatever_the_name() {
        for name in ["alice", "a/b\\c?d#e%", &"ﷺ".repeat(64), ""] {
            let id = reservation_id(&normalize_username(name));
            assert!(id.starts_with(RESERVATION_ID_PREFIX), "{id}");
            assert_eq!(id.chars().count(), RESERVATION_ID_PREFIX.chars().count() + 64);
            assert!(!id.contains(['/', '\\', '?', '#']), "{id}");
            assert!(
                crate::model::validate_id(&id).is_err(),
                "no user id can be a reservation's: {id}"
            );
        }
        assert_eq!(reservation_id("alice"), reservation_id(&normalize_username("ALICE")));
        assert_ne!(reservation_id("alice"), reservation_id("bob"));
    }

    #[test]
    fn a_reservation_is_stored_as_its_own_partition_of_users() {
        let reservation =
            new_reservation("alice".into(), "u1", "2026-11-22T06:05:04.007Z".into(), None);
        let stored = serde_json::to_value(&reservation).unwrap();
        assert_eq!(
            stored,
            serde_json::json!({"id": reservation.id, "userId": reservation.id, "type": "username", "name": "alice",
                "ownerId": "u1", "claimedAt": "2026-11-22T06:05:04.007Z"})
        );
        let moved = new_reservation(
            "bob".into(),
            "u1",
            "2026-11-22T06:05:04.007Z".into(),
            Some("alice".into()),
        );
        assert_eq!(serde_json::to_value(&moved).unwrap()["releases"], "alice");
    }

    const NOW: OffsetDateTime = datetime!(2026-11-22 12:00:00 UTC);

    fn claimed(owner: &str, ago: time::Duration) -> Reservation {
        new_reservation("alice".into(), owner, creation_date(NOW - ago), None)
    }

    #[test]
    fn a_name_is_held_while_its_owner_shows_it_or_claims_it() {
        let minute = time::Duration::minutes(1);
        let hour = time::Duration::hours(1);
        assert_eq!(
            reservation_state(&claimed("u1", hour), "u1", Some("bob"), NOW),
            ReservationState::Ours
        );
        assert_eq!(
            reservation_state(&claimed("u1", hour), "u2", Some("ALICE"), NOW),
            ReservationState::Held,
            "shown"
        );
        assert_eq!(
            reservation_state(&claimed("u1", minute), "u2", Some("bob"), NOW),
            ReservationState::Held,
            "a claim"
        );
        assert_eq!(
            reservation_state(&claimed("u1", minute), "u2", None, NOW),
            ReservationState::Held,
            "a sign-up"
        );
        assert_eq!(
            reservation_state(&claimed("u1", hour), "u2", Some("bob"), NOW),
            ReservationState::Abandoned,
            "renamed"
        );
        assert_eq!(
            reservation_state(&claimed("u1", hour), "u2", None, NOW),
            ReservationState::Abandoned,
            "no such user"
        );
        assert_eq!(
            reservation_state(&claimed("u1", CLAIM_GRACE), "u2", None, NOW),
            ReservationState::Abandoned,
            "the grace period ends"
        );
        let unreadable = Reservation { claimed_at: "yesterday".into(), ..claimed("u1", minute) };
        assert_eq!(reservation_state(&unreadable, "u2", None, NOW), ReservationState::Abandoned);
    }

    #[test]
    fn a_change_of_case_or_form_releases_nothing() {
        assert_eq!(released_name("alice", "Bob"), Some("alice".into()));
        assert_eq!(released_name("Alice", "ALICE"), None);
        assert_eq!(released_name("Jose\u{301}", "José"), None);
    }

    #[test]
    fn only_an_old_claim_of_a_name_its_owner_no_longer_shows_is_left_behind() {
        let hour = time::Duration::hours(1);
        assert!(is_left_behind(&claimed("u1", hour), "u1", "bob", NOW));
        assert!(!is_left_behind(&claimed("u1", hour), "u1", "Alice", NOW), "still their name");
        assert!(!is_left_behind(&claimed("u1", hour), "u2", "bob", NOW), "someone else's");
        assert!(
            !is_left_behind(&claimed("u1", time::Duration::seconds(10)), "u1", "bob", NOW),
            "a claim in progress"
        );
    }

    #[test]
    fn a_reclaim_keeps_a_release_still_to_do() {
        let old = new_reservation(
            "alice".into(),
            "u1",
            "2026-01-01T00:00:00.000Z".into(),
            Some("al".into()),
        );
        let again = reclaimed(&old, "2026-11-22T12:00:00.000Z".into(), None);
        assert_eq!(
            (again.claimed_at.as_str(), again.releases.as_deref()),
            ("2026-11-22T12:00:00.000Z", Some("al"))
        );
        assert_eq!(
            reclaimed(&old, "t".into(), Some("bob".into())).releases.as_deref(),
            Some("bob")
        );
    }
}
