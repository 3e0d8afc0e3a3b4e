//! The blogging platform of Microsoft's article "Model and partition data on Azure Cosmos DB
//! using a real-world example", on the article's final (V3) model, as an Azure Functions custom
//! handler.
//!
//! - [`model`]: the items and the denormalization rules, pure functions.
//! - [`http`]: the HTTP functions (the article's commands and queries), thin handlers.
//! - [`cosmos`]: every Cosmos DB call, through the official SDK; the embedded store.
//! - [`scripts`]: the article's stored procedures, run in Cosmos DB or in-process.

pub mod config;
pub mod cosmos;
pub mod error;
pub mod http;
pub mod model;
pub mod scripts;

use std::sync::Arc;

use config::Config;
use http::AppState;
use scripts::{InProcessScripts, ScriptExecutor};

/// Connects to the configured backend (creating the containers where configured to) and
/// returns what the handlers share.
pub async fn connect(config: &Config) -> Result<AppState, cosmos::StoreError> {
    let store = Arc::new(cosmos::Store::connect(config).await?);
    let scripts: Arc<dyn ScriptExecutor> = Arc::new(InProcessScripts::new(store.clone()));
    Ok(AppState { store, scripts })
}

/// Serves the router on `listener` until `shutdown` resolves, then finishes the requests in
/// flight.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, http::router(state)).with_graceful_shutdown(shutdown).await
}
