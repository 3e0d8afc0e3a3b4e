//! The change-feed functions on a Cosmos DB account whose change feed the Functions host cannot
//! deliver. The Linux emulator ("vNext") serves the change feed to SDKs, but the host's Cosmos
//! DB trigger does not work against it (Azure/azure-cosmos-db-emulator-docker issue 257). With
//! `BLOG_CHANGE_FEED=local` on an account, a processor per function in the handler reads the
//! container's change feed through the SDK. It reads in latest-version mode, every feed range,
//! with one continuation token for all of them. It delivers each page to the same functions the
//! host invokes, with the same retries and dead letters.
//!
//! Its position is an item in the `leases` container, saved after each page is applied. The
//! item is `localProcessor-<Function>`, which neither the trigger's leases, named after the
//! functions' `leaseContainerPrefix`, nor a dead letter can be. A restart delivers again at
//! most the page it was on (the functions are idempotent). One process should follow an account
//! this way at a time; it is for local runs, where the host's trigger is off (docs/local.md).

use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::processor::{
    BATCH_SIZE, Delivered, Deliveries, IDLE_POLL, deliver_until_done, pause_after_failure,
};
use super::{FeedError, Function};
use crate::app::AppState;
use crate::cosmos::{Container, Meter, StoreError};

/// What a processor's position item's id starts with.
pub const POSITION_ID_PREFIX: &str = "localProcessor-";

/// The running account processors; [`AccountProcessors::stop`] ends them.
pub struct AccountProcessors {
    stop: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
    deliveries: Deliveries,
}

impl AccountProcessors {
    /// Starts one processor per function, each from its saved position.
    pub fn start(state: &AppState) -> AccountProcessors {
        let (stop, stopped) = watch::channel(false);
        let mut tasks = Vec::new();
        let mut delivered = Vec::new();
        for function in Function::ALL {
            let tally = Arc::new(Mutex::new(Delivered::default()));
            tasks.push(tokio::spawn(run(state.clone(), function, tally.clone(), stopped.clone())));
            delivered.push((function, tally));
        }
        AccountProcessors { stop, tasks, deliveries: Deliveries::new(delivered) }
    }

    /// What the processors have delivered so far, for the benchmarks and `rebuild-copies`.
    pub fn deliveries(&self) -> Deliveries {
        self.deliveries.clone()
    }

    /// Stops the processors and waits for them; a page being delivered is finished first.
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        for task in self.tasks {
            let _ = task.await;
        }
    }
}

/// A processor's saved position.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Position {
    id: String,
    /// The SDK's continuation token for the whole container.
    continuation: String,
}

fn position_id(function: Function) -> String {
    format!("{POSITION_ID_PREFIX}{}", function.name())
}

/// Runs one processor until stopped, starting over (from its saved position) after a failure.
async fn run(
    state: AppState,
    function: Function,
    delivered: Arc<Mutex<Delivered>>,
    mut stopped: watch::Receiver<bool>,
) {
    while !*stopped.borrow() {
        match follow(&state, function, &delivered, &mut stopped).await {
            Ok(()) => return,
            Err(error) if pause_after_failure(function, &error, &mut stopped).await => {}
            Err(_) => return,
        }
    }
}

/// Reads the change feed from the saved position, a page at a time, saving the position after
/// each page is applied; when a round of every feed range finds nothing, waits and reads again
/// from there. Until stopped.
async fn follow(
    state: &AppState,
    function: Function,
    delivered: &Mutex<Delivered>,
    stopped: &mut watch::Receiver<bool>,
) -> Result<(), FeedError> {
    let id = position_id(function);
    let container = function.container();
    let mut position = saved_position(state, function).await?;
    loop {
        let mut feed = state.store.change_feed_from(container, position.as_deref()).await?;
        while let Some(documents) = feed.next_changes().await? {
            for batch in documents.chunks(BATCH_SIZE) {
                let meter = Arc::new(Meter::default());
                if !deliver_until_done(state, function, batch.to_vec(), &meter, stopped).await {
                    return Ok(());
                }
                delivered.lock().expect("never poisoned").add(batch.len(), &meter);
            }
            let continuation = feed.position()?;
            state
                .store
                .upsert(
                    Container::Leases,
                    &id,
                    &Position { id: id.clone(), continuation: continuation.clone() },
                )
                .await?;
            position = Some(continuation);
        }
        // Caught up: the position of a round that found nothing is as good as the last saved.
        tokio::select! {
            () = tokio::time::sleep(IDLE_POLL) => {}
            _ = stopped.changed() => return Ok(()),
        }
    }
}

/// `function`'s saved position (`None`: it has saved none, and starts from the beginning).
pub(super) async fn saved_position(
    state: &AppState,
    function: Function,
) -> Result<Option<String>, StoreError> {
    let id = position_id(function);
    Ok(state
        .store
        .read::<Position>(Container::Leases, &id, &id)
        .await?
        .map(|saved| saved.continuation))
}
