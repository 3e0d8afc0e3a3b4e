//! Changes that can never be applied, set aside where a person can inspect and replay them.
//!
//! A change-feed function that refused a change for good (an item of the wrong shape), or an
//! invocation it cannot even read, must not block its feed. Under the host's retry policy
//! (`maxRetryCount: -1`) a failed batch is delivered again forever and its lease never moves,
//! so every later change waits behind it. So the function acknowledges it, and keeps it here: a
//! `deadLetter` item in the `leases` container. That is the one container the app owns that no
//! request reads. The trigger's own leases there have ids that start with the functions'
//! `leaseContainerPrefix`, which a dead letter's id never does. `handler dead-letters` lists
//! them; `handler dead-letters replay` delivers each again and removes those that now apply.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{FeedError, Function};
use crate::app::AppState;
use crate::cosmos::{Container, QuerySpec, Store, StoreError};

/// What a dead letter's id starts with.
pub(crate) const ID_PREFIX: &str = "deadLetter-";

/// The most payload one item holds (Cosmos DB items are at most 2 MB, JSON escaping included);
/// a longer payload is kept in several parts.
const PART_BYTES: usize = 1024 * 1024;

/// One part of a set-aside change.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DeadLetter {
    /// The dead letter's id, in the `leases` container.
    pub id: String,
    /// Always `"deadLetter"`.
    pub kind: String,
    /// The function that set it aside (`PostsChangeFeed`, `UsersChangeFeed`).
    pub function: String,
    /// `item`: one changed item, `payload` is its JSON; `unreadable`: a changed item the store
    /// would not read, `payload` is `{partitionKey, id}`; `invocation`: a whole invocation from
    /// the host that could not be read, `payload` is its body as received.
    pub what: String,
    /// Why the item was set aside.
    pub reason: String,
    /// The item as it was delivered (JSON text).
    pub payload: String,
    /// Which part this is, from 0, of `parts`; parts share the id up to `#`.
    pub part: usize,
    /// How many parts the payload was split into to fit in items.
    pub parts: usize,
    /// When it was set aside (RFC 3339, UTC).
    pub set_aside_at: String,
}

/// Keeps `payload` as a dead letter of `function`, and returns its id.
pub async fn set_aside(
    store: &Store,
    function: &str,
    what: &str,
    reason: &str,
    payload: &str,
) -> Result<String, StoreError> {
    let id = format!("{ID_PREFIX}{function}-{}", uuid::Uuid::new_v4());
    let chunks = split_at_char_boundaries(payload, PART_BYTES);
    let parts = chunks.len();
    for (part, chunk) in chunks.into_iter().enumerate() {
        let letter = DeadLetter {
            id: if parts == 1 { id.clone() } else { format!("{id}#{part}") },
            kind: "deadLetter".into(),
            function: function.into(),
            what: what.into(),
            reason: reason.into(),
            payload: chunk.into(),
            part,
            parts,
            set_aside_at: crate::model::now(),
        };
        // Upsert: setting the same part aside twice (a retried call) leaves one copy.
        store.upsert(Container::Leases, &letter.id, &letter).await?;
    }
    // `reason` quoted (it has spaces): the workbook reads it whole (infra/queries/dead-letters.kql).
    tracing::error!(target: "blog::changefeed", function, what, dead_letter = %id, reason, "set aside; `handler dead-letters` lists it");
    Ok(id)
}

/// Every dead letter, parts joined: (id, function, what, reason, payload).
pub async fn list(store: &Store) -> Result<Vec<DeadLetter>, StoreError> {
    let query = QuerySpec {
        sql: Cow::Borrowed("SELECT * FROM c WHERE c.kind = 'deadLetter'"),
        parameters: Vec::new(),
    };
    let mut parts: Vec<DeadLetter> = store
        .query_all_partitions(Container::Leases, query)
        .await?
        .into_iter()
        .filter_map(|document| serde_json::from_value(document).ok())
        .collect();
    parts.sort_by(|a, b| {
        (a.set_aside_at.as_str(), a.id.as_str()).cmp(&(b.set_aside_at.as_str(), b.id.as_str()))
    });
    let mut letters: Vec<DeadLetter> = Vec::new();
    for part in parts {
        let base = part.id.split('#').next().unwrap_or_default().to_owned();
        match letters.last_mut() {
            Some(letter) if letter.id == base => letter.payload.push_str(&part.payload),
            _ => letters.push(DeadLetter { id: base, ..part }),
        }
    }
    Ok(letters)
}

/// Removes a dead letter, every part of it.
pub(crate) async fn remove(store: &Store, letter: &DeadLetter) -> Result<(), StoreError> {
    for part in 0..letter.parts {
        let id =
            if letter.parts == 1 { letter.id.clone() } else { format!("{}#{part}", letter.id) };
        match store
            .execute_write(
                Container::Leases,
                &id,
                crate::cosmos::WriteOp::Delete { id: id.clone(), if_match: None },
            )
            .await
        {
            Ok(()) | Err(StoreError::NotFound) => {}
            Err(error) => return Err(error),
        }
    }
    Ok(())
}

/// How far a replay has got: of `total` dead letters, `applied` were applied and removed, `kept`
/// were refused again and kept.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Replayed {
    /// Dead letters delivered again and removed.
    pub applied: usize,
    /// Dead letters that failed again and were kept.
    pub kept: usize,
    /// Dead letters there were.
    pub total: usize,
}

/// Delivers every dead letter again to its function and removes those it now applies (after a
/// fix of the function, or of the data it needed). Returns (applied and removed, still refused),
/// and tells `progress` how far it has got before the first dead letter and after each
/// (`handler dead-letters replay` shows it as it goes).
pub async fn replay(
    state: &AppState,
    progress: &mut dyn FnMut(Replayed),
) -> Result<(usize, usize), FeedError> {
    let letters = list(&state.store).await?;
    let mut replayed = Replayed { total: letters.len(), ..Replayed::default() };
    progress(replayed);
    for letter in letters {
        if replay_one(state, &letter).await? {
            replayed.applied += 1;
        } else {
            replayed.kept += 1;
        }
        progress(replayed);
    }
    Ok((replayed.applied, replayed.kept))
}

/// One dead letter delivered again: `true` when it applied and was removed, `false` when it
/// was refused again and kept.
async fn replay_one(state: &AppState, letter: &DeadLetter) -> Result<bool, FeedError> {
    let Some(function) = Function::named(&letter.function) else {
        return Ok(false);
    };
    let documents = match letter.what.as_str() {
        "invocation" => super::invocation::read_invocation(letter.payload.as_bytes())
            .map(|(documents, _)| documents)
            .map_err(StillUnreadable::from),
        "unreadable" => read_again(state, function, &letter.payload).await,
        _ => serde_json::from_str::<Value>(&letter.payload)
            .map(|item| vec![item])
            .map_err(StillUnreadable::NotJson),
    };
    let report = match documents {
        Ok(documents) => function.apply(state, documents).await?,
        Err(error) => {
            let why = crate::logging::with_causes(&error);
            tracing::warn!(target: "blog::changefeed", dead_letter = %letter.id, %why, "still unreadable; kept");
            return Ok(false);
        }
    };
    if let Some((why, _)) = report.refused.first() {
        tracing::warn!(target: "blog::changefeed", dead_letter = %letter.id, %why, "still refused; kept");
        Ok(false)
    } else {
        remove(&state.store, letter).await?;
        Ok(true)
    }
}

/// An item set aside because it could not be read, read again: `[]` if it is gone now.
async fn read_again(
    state: &AppState,
    function: Function,
    payload: &str,
) -> Result<Vec<Value>, StillUnreadable> {
    let (partition_key, id) = address(payload)?;
    let document = state
        .store
        .read::<Value>(function.container(), &partition_key, &id)
        .await
        .map_err(StillUnreadable::Store)?;
    Ok(document.into_iter().collect())
}

/// The partition key and id an `unreadable` dead letter's payload names.
fn address(payload: &str) -> Result<(String, String), StillUnreadable> {
    let at: Value = serde_json::from_str(payload).map_err(StillUnreadable::NotJson)?;
    match (at["partitionKey"].as_str(), at["id"].as_str()) {
        (Some(partition_key), Some(id)) => Ok((partition_key.to_owned(), id.to_owned())),
        _ => Err(StillUnreadable::NoAddress),
    }
}

/// Why a dead letter's change still cannot be read, so that it is kept.
#[derive(Debug, thiserror::Error)]
enum StillUnreadable {
    /// The invocation it holds is still not one.
    #[error(transparent)]
    Invocation(#[from] super::invocation::InvocationError),
    /// Its payload is not JSON.
    #[error("the payload is not JSON")]
    NotJson(#[source] serde_json::Error),
    /// Its payload does not say where the unreadable item is.
    #[error("no partitionKey and id")]
    NoAddress,
    /// The store does not read the item still.
    #[error("the item cannot be read")]
    Store(#[source] StoreError),
}

/// A dead letter as one line for a person: what, why, and the start of the payload.
pub fn describe(letter: &DeadLetter) -> Value {
    json!({
        "id": letter.id, "function": letter.function, "what": letter.what, "reason": letter.reason,
        "setAsideAt": letter.set_aside_at, "payload": letter.payload,
    })
}

fn split_at_char_boundaries(text: &str, max_bytes: usize) -> Vec<&str> {
    let mut chunks = Vec::new();
    let mut rest = text;
    while rest.len() > max_bytes {
        let mut end = max_bytes;
        while !rest.is_char_boundary(end) {
            end -= 1;
        }
        let (chunk, tail) = rest.split_at(end);
        chunks.push(chunk);
        rest = tail;
    }
    chunks.push(rest);
    chunks
}

#[cfg(test)]
mod tests {
    use super::{StillUnreadable, address, split_at_char_boundaries};

    #[test]
    fn an_unreadable_letter_names_its_item_or_is_kept() {
        assert_eq!(
            address(r#"{"partitionKey": "p1", "id": "c1"}"#).unwrap(),
            ("p1".to_owned(), "c1".to_owned())
        );
        assert!(matches!(address(r#"{"id": "c1"}"#), Err(StillUnreadable::NoAddress)));
        assert!(matches!(address("{"), Err(StillUnreadable::NotJson(_))));
    }

    #[test]
    fn long_payloads_split_between_characters() {
        assert_eq!(split_at_char_boundaries("", 4), vec![""]);
        assert_eq!(split_at_char_boundaries("abcdefghij", 4), vec!["abcd", "efgh", "ij"]);
        assert_eq!(split_at_char_boundaries("aéé", 2), vec!["a", "é", "é"]);
    }
}
