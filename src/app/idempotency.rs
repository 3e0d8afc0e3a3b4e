//! Writes made once per key: the `Idempotency-Key` a client sends with a write (the IETF
//! httpapi draft), or the one-time key every form of the pages carries.
//!
//! A keyed write commits a *request record* in the same transaction as the write, in the same
//! partition. The record is an item of type `request` whose id is derived from the caller and
//! the key, so that Cosmos DB itself refuses a second one. A request sent again with the key
//! finds the record instead of writing again:
//! - The same request (its [fingerprint](Once::of)) gets the first answer. That is its status,
//!   and the item it wrote as that item is now.
//! - Another request with the key is refused ([`AppError::KeyReused`]), and nothing is written.
//!
//! So an answer lost after Cosmos DB committed the write (a timeout, a dropped connection, a
//! crash of the instance) costs nothing: the caller sends the request again with its key and
//! learns what happened. Without a key nothing of this runs, and such a write is not retried by
//! the handler once it may have been applied (docs/faults.md).
//!
//! Where the write is a stored procedure (C3–C7), the procedure reads the record first and
//! creates it last, in its own transaction. Where it is a plain write (C1, C2), a transactional
//! batch creates the record beside the write ([`commit`]). Records expire with the container's
//! time to live, [`KEY_LIFETIME_SECS`] after the write: a key is remembered for a day.
//!
//! The record is in the write's partition, so it alone would remember a key per post (or per
//! user): the same key on another post would write again. So before its write, a keyed request
//! also *claims* its key in the caller's own partition of `users` ([`Once::claimed`]). The
//! claim is one create, which Cosmos DB refuses when the key was claimed before. Once the claim
//! is found, a request with another fingerprint is refused there, whatever partition it writes
//! to. The claim is not in the write's transaction (no transaction spans two partitions): a
//! request cut off between the two leaves a claim and no write, and the same request sent again
//! finds its own claim and goes on. So a key is bound to the first request it came with, made
//! or not.
//!
//! Both are *request records*, ids starting with [`REQUEST_RECORD_PREFIX`], read by their id
//! alone: the embedded store keeps them on disk only (`cosmos::embedded`).

use super::{BadInput, Clash, Contended};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::{AppError, AppResult, Caller, Missing};
use crate::cosmos::{Container, Store, StoreError, WriteOp};
use crate::model::{REQUEST_RECORD_PREFIX, hex};
use crate::scripts::ScriptError;

/// How long a key is remembered: its record's `ttl`.
pub(crate) const KEY_LIFETIME_SECS: u64 = 24 * 60 * 60;

/// The longest key accepted, in characters (a UUID has 36).
pub(crate) const MAX_KEY_CHARS: usize = 255;

/// How the refusal of a key used for another request starts.
pub(crate) const KEY_REUSED: &str = "This Idempotency-Key was already used for another request";

/// An idempotency key as the caller sent it, checked: 1 to [`MAX_KEY_CHARS`] printable ASCII
/// characters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct IdempotencyKey(String);

impl IdempotencyKey {
    /// Reads the header's value. The draft makes it a Structured Field string (`"8e03..."`, RFC
    /// 8941); most clients send the bare value, so both are taken, and mean the same key.
    pub(crate) fn parse(value: &str) -> AppResult<IdempotencyKey> {
        let value = value.trim();
        let key = match value.strip_prefix('"').and_then(|rest| rest.strip_suffix('"')) {
            Some(quoted) if !quoted.contains(['"', '\\']) => quoted,
            Some(_) => {
                return Err(invalid("it may not contain a quote or backslash inside its quotes"));
            }
            None => value,
        };
        if key.is_empty() {
            return Err(invalid("it is empty"));
        }
        if key.chars().count() > MAX_KEY_CHARS {
            return Err(invalid(&format!("it is longer than {MAX_KEY_CHARS} characters")));
        }
        if let Some(bad) = key.chars().find(|c| !(' '..='~').contains(c)) {
            return Err(invalid(&format!(
                "it contains {bad:?}; a key is printable ASCII, such as a UUID"
            )));
        }
        Ok(IdempotencyKey(key.to_owned()))
    }

    /// A new key for a form: a random UUID, shown in the form, sent back with it.
    pub(crate) fn new_random() -> IdempotencyKey {
        IdempotencyKey(crate::model::new_id())
    }

    /// The key as sent.
    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }
}

/// A key sent with a request other than the one it was first sent with.
fn key_reused() -> AppError {
    AppError::KeyReused
}

fn invalid(why: &str) -> AppError {
    AppError::Invalid(BadInput::IdempotencyKey(why.to_owned()))
}

/// One keyed write: its record's id, its claim's, and its fingerprint.
#[derive(Debug)]
pub(crate) struct Once {
    caller: String,
    record_id: String,
    claim_id: String,
    derived: [u8; 32],
    fingerprint: String,
}

/// A key's claim in its caller's partition, as found by a later request with the key.
#[derive(Debug, Deserialize)]
struct Claim {
    fingerprint: String,
}

/// The record a keyed write left, as found by a request sent again.
#[derive(Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RequestRecord {
    fingerprint: String,
    /// The item the write made or changed (a deletion: the item deleted).
    item_id: String,
}

impl Once {
    /// The keyed write `request` of `caller`, if they sent a key. `request` names the use case
    /// and every input it acts on (ids from the path, fields of the body), which make its
    /// fingerprint. A key sent again with other inputs is another request.
    pub(crate) fn of(caller: &Caller, request: &[&str]) -> Option<Once> {
        let key = caller.key.as_ref()?;
        let digest = |purpose: &str, parts: &[&str]| {
            let mut hash = Sha256::new();
            for part in std::iter::once(purpose).chain(parts.iter().copied()) {
                // Length-prefixed, so that no two lists of parts hash alike.
                hash.update((part.len() as u64).to_le_bytes());
                hash.update(part.as_bytes());
            }
            <[u8; 32]>::from(hash.finalize())
        };
        let named = digest("record", &[&caller.id, key.as_str()]);
        let claim = digest("claim", &[&caller.id, key.as_str()]);
        Some(Once {
            caller: caller.id.clone(),
            record_id: format!("{REQUEST_RECORD_PREFIX}{}", hex(&named[..16])),
            claim_id: format!("{REQUEST_RECORD_PREFIX}claim-{}", hex(&claim[..16])),
            derived: digest("item", &[&caller.id, key.as_str()]),
            fingerprint: hex(&digest("request", request)),
        })
    }

    /// [`Once::of`], the key claimed for this request in the caller's partition of `users`
    /// first (see the module's docs): a key the caller used for another request, on any item,
    /// is refused here, before anything is written.
    pub(crate) async fn claimed(
        store: &Store,
        caller: &Caller,
        request: &[&str],
    ) -> AppResult<Option<Once>> {
        let Some(once) = Once::of(caller, request) else { return Ok(None) };
        let claim = json!({
            "id": once.claim_id,
            "type": "request",
            "userId": once.caller,
            "fingerprint": once.fingerprint,
            "ttl": KEY_LIFETIME_SECS,
        });
        // Created, or found: twice at most, for a claim that expired between the two calls.
        for _ in 0..2 {
            match store.create(Container::Users, &once.caller, &claim).await {
                Ok(()) => return Ok(Some(once)),
                Err(StoreError::Conflict) => {}
                Err(other) => return Err(other.into()),
            }
            match store.read::<Claim>(Container::Users, &once.caller, &once.claim_id).await? {
                Some(found) if found.fingerprint == once.fingerprint => return Ok(Some(once)),
                Some(_) => return Err(key_reused()),
                None => continue,
            }
        }
        Err(AppError::Busy(Contended::KeyJustExpired))
    }

    /// The id of an item this write creates where the id must be known from the key alone. A
    /// new post is such an item: its id is its partition, where the record is looked up. The id
    /// is a UUID (version 8) derived from the caller and the key.
    pub(crate) fn item_id(&self) -> String {
        let mut bytes = [0; 16];
        bytes.copy_from_slice(&self.derived[..16]);
        uuid::Builder::from_custom_bytes(bytes).into_uuid().to_string()
    }

    /// The record committed with the write, in `container`'s partition `partition_key`, naming
    /// `item_id`.
    pub(crate) fn record(&self, container: Container, partition_key: &str, item_id: &str) -> Value {
        let mut record = json!({
            "id": self.record_id,
            "type": "request",
            "fingerprint": self.fingerprint,
            "itemId": item_id,
            "ttl": KEY_LIFETIME_SECS,
        });
        record[container.partition_key_path().trim_start_matches('/')] = json!(partition_key);
        record
    }

    /// The first answer's item id, if `found` is this request's record; else the key was used
    /// for another request: refused.
    pub(crate) fn repeated(&self, found: &RequestRecord) -> AppResult<String> {
        if found.fingerprint == self.fingerprint {
            Ok(found.item_id.clone())
        } else {
            Err(key_reused())
        }
    }

    /// [`Once::repeated`], for the record a stored procedure answered with `repeated`.
    pub(crate) fn repeated_record(&self, record: Value) -> AppResult<String> {
        let found = serde_json::from_value::<RequestRecord>(record)
            .map_err(|error| AppError::unexpected_from("a request record is not one", error))?;
        self.repeated(&found)
    }

    /// Looks the key up in the partition its write goes to: the first answer's item id, if the
    /// request was made before (one point read).
    pub(crate) async fn find(
        &self,
        store: &Store,
        container: Container,
        partition_key: &str,
    ) -> AppResult<Option<String>> {
        match store.read::<RequestRecord>(container, partition_key, &self.record_id).await? {
            Some(found) => self.repeated(&found).map(Some),
            None => Ok(None),
        }
    }
}

/// What [`commit`] did.
pub(crate) enum Committed {
    /// The write, and the key's record with it.
    Written,
    /// Nothing: a request with the key was made before; the first answer's item id.
    Repeated(String),
}

/// Commits `writes` in `container`'s partition `partition_key`, with the key's record naming
/// `item_id` when there is a key, in one transactional batch: all or none. A record there
/// already (a request with the key, committed meanwhile) fails the batch, and its answer is
/// the first one's. A write's own refusals are the errors [`Store::execute_write`] gives.
pub(crate) async fn commit(
    store: &Store,
    container: Container,
    partition_key: &str,
    once: Option<&Once>,
    item_id: &str,
    mut writes: Vec<WriteOp>,
) -> AppResult<Committed> {
    let Some(once) = once else {
        if writes.len() == 1 {
            let write = writes.pop().expect("one write");
            store.execute_write(container, partition_key, write).await?;
        } else {
            store
                .execute_batch(container, partition_key, writes)
                .await
                .map_err(StoreError::of_failed_operation)?;
        }
        return Ok(Committed::Written);
    };
    let record = WriteOp::Create { document: once.record(container, partition_key, item_id) };
    writes.insert(0, record);
    match store.execute_batch(container, partition_key, writes).await {
        Ok(()) => Ok(Committed::Written),
        // The record, the batch's first operation, is there already.
        Err(failed @ StoreError::BatchFailed { .. })
            if failed.batch_cause() == Some(409) && first_failed(&failed) =>
        {
            match once.find(store, container, partition_key).await? {
                Some(item_id) => Ok(Committed::Repeated(item_id)),
                // (Expired between the two calls: as if never made.)
                None => Err(AppError::Busy(Contended::KeyJustExpired)),
            }
        }
        Err(other) => Err(other.of_failed_operation().into()),
    }
}

/// Whether a failed batch failed at its first operation.
fn first_failed(failed: &StoreError) -> bool {
    matches!(failed, StoreError::BatchFailed { statuses } if statuses.first().is_some_and(|status| *status != 424))
}

/// The key's record as a stored procedure's last argument (`null` without a key).
pub(crate) fn record_argument(
    once: Option<&Once>,
    partition_key: &str,
    item_id: &str,
) -> Option<Value> {
    once.map(|once| once.record(Container::Posts, partition_key, item_id))
}

/// What a stored procedure's failure means to the caller: one that threw because the same
/// request, sent twice at once, committed first (`remember` in the scripts) is 409, as the
/// draft says of a request whose key is in use.
pub(crate) fn script_error(error: ScriptError) -> AppError {
    match error {
        ScriptError::InProgress(_) => AppError::Conflict(Clash::KeyInProgress),
        other => other.into(),
    }
}

/// A deletion's first answer (nothing), for a request a stored procedure answered `repeated`.
pub(crate) fn repeated_deletion(once: Option<&Once>, record: Value) -> AppResult<()> {
    repeated_by(once, record).map(drop)
}

/// A creation's first answer, for a request a stored procedure answered `repeated`: the item
/// it made in the post's partition (`what`: "comment", "like"), as it is now.
pub(crate) async fn repeated_creation<T: DeserializeOwned>(
    store: &Store,
    once: Option<&Once>,
    post_id: &str,
    record: Value,
    what: &str,
) -> AppResult<T> {
    let item_id = repeated_by(once, record)?;
    first_answer(store, Container::Posts, post_id, &item_id, what).await
}

/// The first answer's item id, from the record a stored procedure answered `repeated` with.
fn repeated_by(once: Option<&Once>, record: Value) -> AppResult<String> {
    let once =
        once.ok_or_else(|| AppError::unexpected("a script repeated a request sent without a key"))?;
    once.repeated_record(record)
}

/// The item a repeated request's first answer named, as it is now; gone since, not found.
pub(crate) async fn first_answer<T: DeserializeOwned>(
    store: &Store,
    container: Container,
    partition_key: &str,
    item_id: &str,
    what: &str,
) -> AppResult<T> {
    store
        .read::<T>(container, partition_key, item_id)
        .await?
        .ok_or_else(|| deleted_since(what, item_id))
}

/// The answer to a repeated request whose item has been deleted since: not found, as a read of
/// it would be, never the item's remains (a deleted post's tombstone).
pub(crate) fn deleted_since(what: &str, item_id: &str) -> AppError {
    AppError::NotFound(Missing::DeletedSince { what: what.to_owned(), item: item_id.to_owned() })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The key in use is the script's typed throw, not its words: the same words thrown without
    /// the number stay the script's failure.
    #[test]
    fn a_key_in_use_is_409_by_the_throws_kind() {
        let message = "createLike: a request with this key is in progress";
        let in_use = script_error(ScriptError::InProgress(message.to_owned()));
        assert!(matches!(&in_use, AppError::Conflict(Clash::KeyInProgress)), "{in_use:?}");
        let worded = script_error(ScriptError::Thrown(message.to_owned()));
        assert!(matches!(worded, AppError::Script(ScriptError::Thrown(_))), "{worded:?}");
    }

    fn caller(id: &str, key: Option<&str>) -> Caller {
        Caller { id: id.to_owned(), key: key.map(|key| IdempotencyKey::parse(key).unwrap()) }
    }

    #[test]
    fn a_key_is_taken_bare_or_as_a_structured_field_string() {
        assert_eq!(
            IdempotencyKey::parse("8e03978e").unwrap(),
            IdempotencyKey::parse("\"8e03978e\"").unwrap()
        );
        for bad in ["", "\"\"", "\"a\"b\"", "caf\u{e9}", "a\tb", &"k".repeat(MAX_KEY_CHARS + 1)] {
            let error = IdempotencyKey::parse(bad).unwrap_err();
            assert!(
                matches!(error, AppError::Invalid(BadInput::IdempotencyKey(_))),
                "{bad:?}: {error}"
            );
        }
        assert!(IdempotencyKey::parse(&"k".repeat(MAX_KEY_CHARS)).is_ok());
    }

    #[test]
    fn no_key_no_record() {
        assert!(Once::of(&caller("ana", None), &["c3", "post", "hello"]).is_none());
    }

    #[test]
    fn a_record_is_its_callers_key_with_the_request_as_fingerprint() {
        let once = Once::of(&caller("ana", Some("k1")), &["c3", "post", "hello"]).unwrap();
        let again = Once::of(&caller("ana", Some("k1")), &["c3", "post", "hello"]).unwrap();
        let other_text = Once::of(&caller("ana", Some("k1")), &["c3", "post", "hello!"]).unwrap();
        let other_caller = Once::of(&caller("bob", Some("k1")), &["c3", "post", "hello"]).unwrap();
        let split_otherwise =
            Once::of(&caller("ana", Some("k1")), &["c3", "posth", "ello"]).unwrap();
        assert_eq!(
            (once.record_id.as_str(), once.item_id()),
            (again.record_id.as_str(), again.item_id())
        );
        assert_eq!(once.record_id, other_text.record_id, "one key, one record");
        assert_ne!(once.record_id, other_caller.record_id, "two callers' keys never meet");
        assert_ne!(once.item_id(), other_caller.item_id());
        assert_ne!(once.fingerprint, other_text.fingerprint);
        assert_ne!(once.fingerprint, split_otherwise.fingerprint);

        let record = once.record(Container::Posts, "post", "comment-1");
        assert_eq!(record["postId"], "post");
        assert_eq!(record["type"], "request");
        assert_eq!(record["ttl"], KEY_LIFETIME_SECS);
        let found: RequestRecord = serde_json::from_value(record).unwrap();
        assert_eq!(once.repeated(&found).unwrap(), "comment-1");
        assert!(matches!(other_text.repeated(&found), Err(AppError::KeyReused)));
        assert_eq!(once.record(Container::Users, "ana", "ana")["userId"], "ana");
        assert!(uuid::Uuid::parse_str(&once.item_id()).is_ok());
    }
}
