//! The embedded store's client: the SDK's in-memory emulator (feature
//! `__internal_in_memory_emulator`) behind the ordinary `CosmosClient`, so the whole SDK
//! pipeline runs and only the network is replaced. The emulator is internal to the SDK and not
//! a public contract: this file is the only one that touches it, the SDK version is pinned
//! exactly, and the deployed build (`--no-default-features`) does not contain it.

use std::sync::Arc;

use azure_core::credentials::Secret;
use azure_data_cosmos::options::Region;
use azure_data_cosmos::{AccountReference, CosmosClient, CosmosClientBuilder, CosmosRuntimeBuilder, RoutingStrategy};
use azure_data_cosmos_driver::in_memory_emulator::{InMemoryEmulatorHttpClient, VirtualAccountConfig, VirtualRegion};

/// The emulator's made-up account; nothing is ever sent there.
const ENDPOINT: &str = "https://blog.emulator.local";

pub async fn client() -> azure_data_cosmos::Result<CosmosClient> {
    let url = azure_core::http::Url::parse(ENDPOINT).expect("a valid URL");
    let emulator =
        Arc::new(InMemoryEmulatorHttpClient::new(VirtualAccountConfig::new(vec![VirtualRegion::new("East US", url)])?));
    // The emulator checks that requests are signed, not with which key.
    let account = AccountReference::with_authentication_key(ENDPOINT.parse()?, Secret::new("ZW1iZWRkZWQ="));
    let runtime = CosmosRuntimeBuilder::from(emulator.runtime_builder()).build().await?;
    CosmosClientBuilder::new().with_runtime(runtime).build(account, RoutingStrategy::ProximityTo(Region::EAST_US)).await
}
